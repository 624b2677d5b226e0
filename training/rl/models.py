"""The actor, the reference and the critic: a local checkpoint by path, or a small model built from a configuration
with a byte-level BPE tokenizer trained offline on the task corpus (no weights can be downloaded here)."""

import json
import logging
from pathlib import Path

import torch
from torch import nn

from agent.policies.chat_template import CHAT_TEMPLATE

log = logging.getLogger(__name__)

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class ModelError(RuntimeError):
    """A model or tokenizer cannot be loaded or built; the message says what to change in the config."""


# The project's own CUDA, C++ and Python: the kernels, bindings and harness code the agent reads and writes.
SOURCE_FOLDERS = ("agent", "sandbox")
SOURCE_SUFFIXES = {".py", ".cu", ".cuh", ".cpp", ".h", ".hpp"}
MAX_TRAJECTORIES = 4000  # enough text for the merges; more only slows the tokenizer's training


def corpus(task_sources, trajectories=()):
    """The texts a from-scratch tokenizer is trained on: SKILL.md, the agent's reference workspaces, the tool
    schemas and prompts, the project's CUDA/C++/Python sources, the tasks' sources (TASK_SOURCES) and the
    TRAJECTORIES the actor will be fine-tuned on (their thoughts, tool calls and observations, as it will read them)."""
    from agent.loop import SYSTEM, TASK
    from agent.tools import SCHEMAS
    from agent.workspace import EXAMPLES, SKILL

    texts = [SKILL.read_text(), json.dumps(SCHEMAS), SYSTEM, TASK]
    texts += [p.read_text(errors="replace") for p in sorted(EXAMPLES.rglob("*")) if p.is_file()]
    root = Path(__file__).resolve().parents[2]
    texts += [
        p.read_text(errors="replace")
        for folder in SOURCE_FOLDERS
        for p in sorted((root / folder).rglob("*"))
        if p.suffix in SOURCE_SUFFIXES and p.is_file()
    ]
    texts += [trajectory_text(t) for t in list(trajectories)[:MAX_TRAJECTORIES]]
    return texts + list(task_sources)


def trajectory_text(trajectory):
    """A trajectory's text as the chat template lays it out: each turn's thought, its tool calls as the JSON of a
    <tool_call> block, and what the tools answered."""
    parts = []
    for turn in trajectory.turns:
        parts.append(turn.thought or "")
        for call in turn.tool_calls:
            parts.append(
                "<tool_call>\n" + json.dumps({"name": call.name, "arguments": call.arguments}) + "\n</tool_call>"
            )
            parts.append("<tool_response>\n" + (call.observation or "") + "\n</tool_response>")
    return "\n".join(parts)


def train_tokenizer(texts, vocab_size):
    """A byte-level BPE tokenizer (every string encodes) with the chat template, trained on TEXTS."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(texts, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>", chat_template=CHAT_TEMPLATE
    )


def model_config(cfg, tokenizer):
    """The transformers configuration of a small causal LM of CFG's shape over TOKENIZER's vocabulary."""
    from transformers import AutoConfig

    if cfg.arch not in ("llama", "qwen2", "mistral"):
        raise ModelError(f"model.arch {cfg.arch!r} is not supported: use llama, qwen2 or mistral")
    return AutoConfig.for_model(
        cfg.arch,
        vocab_size=len(tokenizer),
        hidden_size=cfg.hidden_size,
        intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.layers,
        num_attention_heads=cfg.heads,
        num_key_value_heads=cfg.heads,
        max_position_embeddings=cfg.max_positions,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )


def base_checkpoint(cfg, folder, task_sources, seed=0, trajectories=()):
    """The folder of the run's base model: CFG.path when given, else FOLDER, where a small model and its
    tokenizer (trained on corpus(TASK_SOURCES, TRAJECTORIES)) are built once (randomly initialized, seeded) and
    saved, so every stage and resume starts alike."""
    if cfg.path:
        path = Path(cfg.path)
        if not (path / "config.json").is_file():
            raise ModelError(
                f"model.path {path} is not a transformers checkpoint (no config.json): give a local "
                f"checkpoint folder, or leave model.path empty to build a small model"
            )
        return path
    folder = Path(folder)
    if (folder / "config.json").is_file():
        return folder
    from transformers import AutoModelForCausalLM

    tokenizer = train_tokenizer(corpus(task_sources, trajectories), cfg.vocab_size)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(model_config(cfg, tokenizer))
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    log.info(
        "built a %.2fM-parameter %s with a %d-token tokenizer in %s",
        sum(p.numel() for p in model.parameters()) / 1e6,
        cfg.arch,
        len(tokenizer),
        folder,
    )
    return folder


def load_tokenizer(path):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path))
    if not tokenizer.chat_template:
        raise ModelError(f"{path} has no chat template: the agent needs one with tools")
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_actor(path, dtype="float32"):
    """The causal LM saved at PATH, in training mode."""
    from transformers import AutoModelForCausalLM

    try:
        return AutoModelForCausalLM.from_pretrained(str(path), dtype=DTYPES[dtype])
    except OSError as exc:
        raise ModelError(f"cannot load the checkpoint {path}: {exc}") from None


class ValueModel(nn.Module):
    """The critic: a language model of its own (not the actor's) with a linear head giving one value per token."""

    def __init__(self, backbone):
        super().__init__()
        self.backbone = backbone
        self.head = nn.Linear(backbone.config.hidden_size, 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, input_ids, attention_mask=None, position_ids=None):
        hidden = self.backbone(
            input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False
        ).last_hidden_state
        return self.head(hidden.to(self.head.weight.dtype)).squeeze(-1)

    def save_pretrained(self, folder, state_dict=None):
        folder = Path(folder)
        state = state_dict if state_dict is not None else self.state_dict()
        backbone = {k[len("backbone.") :]: v for k, v in state.items() if k.startswith("backbone.")}
        self.backbone.save_pretrained(folder, state_dict=backbone)
        torch.save({k[len("head.") :]: v for k, v in state.items() if k.startswith("head.")}, folder / "value_head.pt")

    @classmethod
    def from_pretrained(cls, folder, dtype="float32"):
        """A critic from FOLDER: a saved critic (with value_head.pt), or any causal LM checkpoint (a fresh head)."""
        from transformers import AutoModel

        folder = Path(folder)
        try:
            model = cls(AutoModel.from_pretrained(str(folder), dtype=DTYPES[dtype]))
        except OSError as exc:
            raise ModelError(f"cannot load the critic's checkpoint {folder}: {exc}") from None
        head = folder / "value_head.pt"
        if head.is_file():
            model.head.load_state_dict(torch.load(head, weights_only=True))
        return model
