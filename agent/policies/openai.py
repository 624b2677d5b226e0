"""The `openai` policy: any OpenAI-compatible chat endpoint with tool calling (vLLM, SGLang, hosted APIs, agent.serve).

Configured by base URL, model name and key, from arguments or the environment (KS_POLICY_BASE_URL,
KS_POLICY_MODEL, KS_POLICY_API_KEY or OPENAI_API_KEY). Plain HTTP through the standard library: the request is
one JSON document, and the fields vLLM adds for training (token ids) need no client support.
"""
import json
import os
import random
import socket
import time
import urllib.error
import urllib.request

from agent.policies.base import Action, ContextTooLong, Policy, PolicyError, PolicyUnavailable, call_from_json

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
RETRYABLE = {408, 409, 425, 429, 500, 502, 503, 504}
# How servers word "the prompt is longer than the context" (vLLM, SGLang, OpenAI, agent.serve).
CONTEXT_WORDS = ("maximum context length", "context_length_exceeded", "context length", "too many tokens")


class OpenAIPolicy(Policy):
    name = "openai"

    def __init__(self, model=None, base_url=None, api_key=None, temperature=0.7, max_tokens=4096, timeout_s=600.0,
                 retries=5, backoff_s=1.0, token_ids=False, extra_body=None):
        self.base_url = (base_url or os.environ.get("KS_POLICY_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.model = model or os.environ.get("KS_POLICY_MODEL") or ""
        self.api_key = api_key or os.environ.get("KS_POLICY_API_KEY") or os.environ.get("OPENAI_API_KEY") or ""
        self.temperature, self.max_tokens, self.timeout_s = temperature, max_tokens, timeout_s
        self.retries, self.backoff_s = retries, backoff_s
        # vLLM's return_token_ids and logprobs: what RL training needs. Hosted APIs reject unknown fields.
        self.token_ids = token_ids
        self.extra_body = extra_body or {}

    def act(self, messages, tools):
        if not self.model:
            self.model = self.served_model()
        body = {"model": self.model, "messages": messages, "tools": tools, "tool_choice": "auto",
                "temperature": self.temperature, "max_tokens": self.max_tokens, **self.extra_body}
        if self.token_ids:
            body.update(return_token_ids=True, logprobs=True)
        return parse_completion(self._request("POST", "/chat/completions", body))

    def served_model(self):
        """The first model the endpoint serves (vLLM and agent.serve serve one), for when none was named."""
        models = self._request("GET", "/models").get("data") or []
        if not models:
            raise PolicyUnavailable(f"{self.base_url}/models lists no model: name one with --model or KS_POLICY_MODEL")
        return models[0]["id"]

    def _request(self, method, path, body=None):
        """One HTTP exchange, retried with exponential backoff (and jitter) on network errors, 429 and 5xx."""
        url = self.base_url + path
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = json.dumps(body).encode() if body is not None else None
        failure = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(self.backoff_s * 2 ** (attempt - 1), 60.0) * random.uniform(0.5, 1.0))
            request = urllib.request.Request(url, data=data, headers=headers, method=method)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                    return json.loads(response.read())
            except urllib.error.HTTPError as exc:
                detail = _error_detail(exc)
                if exc.code in RETRYABLE:
                    failure = f"HTTP {exc.code}: {detail}"
                    continue
                raise _http_error(url, exc.code, detail) from None
            except (urllib.error.URLError, ConnectionError, socket.timeout, TimeoutError) as exc:
                failure = str(getattr(exc, "reason", exc))
            except json.JSONDecodeError:
                failure = "the answer is not JSON"
        raise PolicyUnavailable(
            f"the policy endpoint {url} failed {self.retries + 1} times (last: {failure}). Start a server "
            f"(`vllm serve MODEL --enable-auto-tool-choice --tool-call-parser hermes`, or "
            f"`python -m agent.serve --model DIR`) or point --base-url / KS_POLICY_BASE_URL at a running one")


def _error_detail(exc):
    try:
        text = exc.read().decode(errors="replace")
    except OSError:
        return exc.reason or ""
    try:
        error = json.loads(text).get("error", text)
        return error.get("message", str(error)) if isinstance(error, dict) else str(error)
    except (json.JSONDecodeError, AttributeError):
        return text[:500]


def _http_error(url, code, detail):
    if code == 400 and any(word in detail.lower() for word in CONTEXT_WORDS):
        return ContextTooLong(detail)
    if code in (401, 403):
        return PolicyUnavailable(f"{url} refused the request (HTTP {code}: {detail}): set KS_POLICY_API_KEY")
    if code == 404:
        return PolicyUnavailable(f"{url} answered 404 ({detail}): check --base-url (it usually ends in /v1) "
                                 f"and --model")
    return PolicyError(f"{url} answered HTTP {code}: {detail}")


def parse_completion(data):
    """An Action from a chat completion. Malformed tool calls become ToolCalls with .error, never exceptions."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not choices:
        raise PolicyError(f"the endpoint's answer has no choices: {json.dumps(data)[:300]}")
    choice = choices[0]
    message = choice.get("message") or {}
    content = message.get("content") or ""
    reasoning = message.get("reasoning_content") or message.get("reasoning") or ""
    calls = []
    for tool_call in message.get("tool_calls") or []:
        function = tool_call.get("function") or {}
        calls.append(call_from_json(function.get("name"), function.get("arguments"), tool_call.get("id") or ""))
    usage = data.get("usage") or {}
    logprobs = (choice.get("logprobs") or {}).get("content")
    return Action(thought="\n\n".join(part for part in (reasoning.strip(), content.strip()) if part),
                  tool_calls=calls, finish_reason=choice.get("finish_reason") or "",
                  prompt_tokens=usage.get("prompt_tokens"), completion_tokens=usage.get("completion_tokens"),
                  prompt_token_ids=data.get("prompt_token_ids"), response_token_ids=choice.get("token_ids"),
                  response_logprobs=[entry["logprob"] for entry in logprobs] if logprobs else None)
