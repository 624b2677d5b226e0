"""Policy back-ends, by name: openai (any OpenAI-compatible endpoint), vllm (in-process), transformers, heuristic."""

import importlib

from agent.policies.base import Action, ContextTooLong, Policy, PolicyError, PolicyUnavailable, Task

BACKENDS = {
    "openai": ("agent.policies.openai", "OpenAIPolicy"),
    "vllm": ("agent.policies.vllm_policy", "VLLMPolicy"),
    "transformers": ("agent.policies.transformers_policy", "TransformersPolicy"),
    "heuristic": ("agent.policies.heuristic", "HeuristicPolicy"),
}


def make_policy(name, **options):
    """The policy NAME built with OPTIONS (model, base_url, ...: each back-end takes what it needs)."""
    if name not in BACKENDS:
        raise ValueError(f"unknown policy {name!r}: choose one of {', '.join(BACKENDS)}")
    module_name, class_name = BACKENDS[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        raise PolicyUnavailable(f"the {name} policy is not part of this installation yet ({module_name})") from None
    return getattr(module, class_name)(**options)


__all__ = ["Action", "ContextTooLong", "Policy", "PolicyError", "PolicyUnavailable", "Task", "make_policy", "BACKENDS"]
