"""The `openai` policy: any OpenAI-compatible chat endpoint with tool calling (vLLM, SGLang, `transformers serve`,
hosted APIs, agent.serve), through the `openai` SDK (its typed errors, retries with backoff and timeouts).

Configured by base URL, model name and key, from arguments or the environment (KS_POLICY_BASE_URL,
KS_POLICY_MODEL, KS_POLICY_API_KEY or OPENAI_API_KEY). The fields vLLM adds for training (prompt and response
token ids) are read from the answer's extra fields; servers that do not parse tool calls (no tool-call parser
for the model) have Hermes-style `<tool_call>` blocks read from the reply's text instead.
"""

import json
import os
import re
import threading

from agent.policies.base import (
    Action,
    ContextTooLong,
    Policy,
    PolicyError,
    PolicyUnavailable,
    call_from_json,
    parse_tool_calls,
)

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
# How servers word "the prompt is longer than the context" (vLLM, SGLang, OpenAI, agent.serve).
CONTEXT_WORDS = ("maximum context length", "context_length_exceeded", "context length", "too many tokens")
# A reply whose server stripped the opening <tool_call> (it is a special token of the model) but kept the rest.
BARE_CALL = re.compile(r'(^|\n)\s*(\{\s*"name"\s*:)')


def _client_class():
    try:
        import openai
    except ImportError as exc:  # the SDK is a dependency; a broken environment gets told how to mend it
        raise PolicyUnavailable(
            "the openai policy needs the `openai` package: pip install -e . (it is a dependency of kernel-studio)"
        ) from exc
    return openai


class OpenAIPolicy(Policy):
    name = "openai"

    def __init__(
        self,
        model=None,
        base_url=None,
        api_key=None,
        temperature=0.7,
        max_tokens=4096,
        timeout_s=600.0,
        retries=5,
        backoff_s=1.0,
        token_ids=False,
        extra_body=None,
    ):
        self.base_url = (base_url or os.environ.get("KS_POLICY_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.model = model or os.environ.get("KS_POLICY_MODEL") or ""
        self.api_key = api_key or os.environ.get("KS_POLICY_API_KEY") or os.environ.get("OPENAI_API_KEY") or ""
        self.temperature, self.max_tokens, self.timeout_s = temperature, max_tokens, timeout_s
        self.retries, self.backoff_s = retries, backoff_s
        # vLLM's return_token_ids and logprobs: what RL training needs. Hosted APIs reject unknown fields.
        self.token_ids = token_ids
        self.extra_body = extra_body or {}
        self._client = None
        # The HTTP error codes answered during the calling thread's current request, retries included: a server
        # that answers 500 and then drops the connection is reported by its 500, not by the reset.
        self._seen = threading.local()

    @property
    def client(self):
        if self._client is None:
            openai = _client_class()
            backoff = self.backoff_s

            class Client(openai.OpenAI):
                # The SDK's backoff (0.5 s doubling to 8 s, with jitter) scaled to ours; Retry-After still wins.
                def _calculate_retry_timeout(self, remaining_retries, options, response_headers):
                    base = super()._calculate_retry_timeout(remaining_retries, options, response_headers)
                    retry_after = self._parse_retry_after_header(response_headers)
                    return base if retry_after is not None else base * backoff / 0.5

            def seen(response):
                if response.status_code >= 400:
                    self._codes().append(response.status_code)

            # A key is required by the SDK even where the server wants none (vLLM without --api-key, agent.serve).
            self._client = Client(
                base_url=self.base_url,
                api_key=self.api_key or "EMPTY",
                timeout=self.timeout_s,
                max_retries=self.retries,
                http_client=openai.DefaultHttpxClient(event_hooks={"response": [seen]}),
            )
        return self._client

    def act(self, messages, tools):
        if not self.model:
            self.model = self.served_model()
        extra = dict(self.extra_body)
        if self.token_ids:
            extra.update(return_token_ids=True)
        answer = self._call(
            self.client.chat.completions.create,
            "/chat/completions",
            model=self.model,
            messages=messages,
            tools=tools,
            tool_choice="auto",
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            logprobs=True if self.token_ids else None,
            extra_body=extra or None,
        )
        return parse_completion(answer.model_dump())

    def served_model(self):
        """The first model the endpoint serves (vLLM and agent.serve serve one), for when none was named."""
        models = list(self._call(self.client.models.list, "/models"))
        if not models:
            raise PolicyUnavailable(f"{self.base_url}/models lists no model: name one with --model or KS_POLICY_MODEL")
        return models[0].id

    def _codes(self):
        if not hasattr(self._seen, "codes"):
            self._seen.codes = []
        return self._seen.codes

    def _call(self, method, path, **kwargs):
        """METHOD(**KWARGS) (None values left out), its failures turned into the policy's typed errors."""
        openai = _client_class()
        url = self.base_url + path
        self._codes().clear()
        try:
            return method(**{k: v for k, v in kwargs.items() if v is not None})
        except openai.APIConnectionError as exc:  # APITimeoutError included: the SDK retried them all
            reason = str(exc.__cause__ or exc) or type(exc).__name__
            failing = [code for code in self._codes() if code >= 500]
            if failing:  # it answered, with an error, before it dropped the connection: the error is the news
                raise PolicyUnavailable(
                    f"{url} kept answering HTTP {failing[-1]} and then dropped the connection ({reason}) after "
                    f"{self.retries + 1} tries: the server is overloaded or failing; check its log"
                ) from None
            raise PolicyUnavailable(
                f"the policy endpoint {url} failed {self.retries + 1} times (last: {reason}). Start a server "
                f"(`vllm serve MODEL --enable-auto-tool-choice --tool-call-parser hermes`, or "
                f"`python -m agent.serve --model DIR`) or point --base-url / KS_POLICY_BASE_URL at a running one"
            ) from None
        except openai.APIStatusError as exc:
            raise _http_error(url, exc.status_code, _error_detail(exc)) from None
        except openai.APIResponseValidationError as exc:
            raise PolicyError(f"{url} answered something that is not a chat completion: {exc}") from None


def _error_detail(exc):
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            return str(error.get("message") or error)
        return str(error)
    if body:
        return str(body)[:500]
    return exc.message or ""


def _http_error(url, code, detail):
    if code in (400, 422) and "return_token_ids" in detail:
        return PolicyUnavailable(
            f"{url} does not return token ids (HTTP {code}: {detail}); vLLM does. Serve the "
            f"policy with vLLM for training, or run without --token-ids"
        )
    if code == 400 and any(word in detail.lower() for word in CONTEXT_WORDS):
        return ContextTooLong(detail)
    if code in (401, 403):
        return PolicyUnavailable(f"{url} refused the request (HTTP {code}: {detail}): set KS_POLICY_API_KEY")
    if code == 404:
        return PolicyUnavailable(
            f"{url} answered 404 ({detail}): check --base-url (it usually ends in /v1) and --model"
        )
    if code >= 500 or code in (408, 409, 429):
        return PolicyUnavailable(
            f"{url} kept answering HTTP {code} ({detail}) after every retry: the server is "
            f"overloaded or failing; check its log"
        )
    return PolicyError(f"{url} answered HTTP {code}: {detail}")


def parse_completion(data):
    """An Action from a chat completion (as a dict). Malformed tool calls become ToolCalls with .error, never
    exceptions."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not choices:
        raise PolicyError(f"the endpoint's answer has no choices: {json.dumps(data, default=str)[:300]}")
    choice = choices[0]
    message = choice.get("message") or {}
    content = message.get("content") or ""
    reasoning = message.get("reasoning_content") or message.get("reasoning") or ""
    calls = []
    for tool_call in message.get("tool_calls") or []:
        function = tool_call.get("function") or {}
        calls.append(call_from_json(function.get("name"), function.get("arguments"), tool_call.get("id") or ""))
    finish_reason = choice.get("finish_reason") or ""
    if not calls and "</tool_call>" in content:
        # The server has no tool-call parser for this model: the calls are still in the text.
        text = content if "<tool_call>" in content else BARE_CALL.sub(r"\1<tool_call>\2", content, count=1)
        content, calls = parse_tool_calls(text)
    usage = data.get("usage") or {}
    logprobs = (choice.get("logprobs") or {}).get("content")
    return Action(
        thought="\n\n".join(part for part in (reasoning.strip(), content.strip()) if part),
        tool_calls=calls,
        finish_reason=finish_reason,
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
        prompt_token_ids=data.get("prompt_token_ids"),
        response_token_ids=choice.get("token_ids"),
        response_logprobs=[entry["logprob"] for entry in logprobs] if logprobs else None,
    )
