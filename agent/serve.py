"""`python -m agent.serve --model DIR`: a minimal OpenAI-compatible server for a local checkpoint.

/v1/models and /v1/chat/completions with tools (non-streaming), generating with the transformers policy and
returning Hermes-style `<tool_call>` blocks as OpenAI tool calls, plus vLLM's training fields on request
(`return_token_ids`: prompt_token_ids and token_ids; `logprobs`). For development and tests; production
serving is vLLM. Two modes exist to test clients against real failures: --malformed cuts every tool call's
arguments in half (invalid JSON), --unavailable-first N answers 503 to the first N completions.
"""

import argparse
import json
import logging
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from agent.policies.base import ContextTooLong, PolicyError, parse_tool_calls
from agent.policies.transformers_policy import TransformersPolicy

log = logging.getLogger(__name__)


class Server:
    def __init__(self, policy, name, malformed=False, unavailable_first=0):
        self.policy, self.name = policy, name
        self.malformed = malformed
        self.unavailable_left = unavailable_first
        self.lock = threading.Lock()  # one generation at a time: the model is not shared safely across threads

    def complete(self, body):
        """(status, JSON answer) for a chat completion request."""
        if body.get("stream"):
            return 400, _error("streaming is not supported by agent.serve")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return 400, _error("messages must be a non-empty list")
        with self.lock:
            if self.unavailable_left > 0:
                self.unavailable_left -= 1
                return 503, _error("the server is warming up (--unavailable-first)", "service_unavailable")
            try:
                g = self.policy.generate(
                    messages,
                    body.get("tools"),
                    body.get("max_completion_tokens") or body.get("max_tokens"),
                    body.get("temperature"),
                )
            except ContextTooLong as exc:
                return 400, _error(str(exc), "context_length_exceeded")
            except PolicyError as exc:
                return 500, _error(str(exc))
        content, calls = parse_tool_calls(g.text)
        if any(call.error for call in calls):
            # Like vLLM's hermes parser: a block that does not parse leaves the whole text as content.
            content, calls = g.text, []
        tool_calls = []
        for call in calls:
            arguments = json.dumps(call.arguments)
            if self.malformed:
                arguments = arguments[: len(arguments) // 2]
            tool_calls.append(
                {
                    "id": f"call_{uuid.uuid4().hex[:16]}",
                    "type": "function",
                    "function": {"name": call.name, "arguments": arguments},
                }
            )
        message = {"role": "assistant", "content": content or None}
        if tool_calls:
            message["tool_calls"] = tool_calls
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else g.finish_reason}
        if body.get("logprobs"):
            choice["logprobs"] = {
                "content": [
                    {"token": self.policy.tokenizer.decode([t]), "logprob": lp}
                    for t, lp in zip(g.response_token_ids, g.response_logprobs)
                ]
            }
        answer = {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.name,
            "choices": [choice],
            "usage": {
                "prompt_tokens": len(g.prompt_token_ids),
                "completion_tokens": len(g.response_token_ids),
                "total_tokens": len(g.prompt_token_ids) + len(g.response_token_ids),
            },
        }
        if body.get("return_token_ids"):
            answer["prompt_token_ids"] = g.prompt_token_ids
            choice["token_ids"] = g.response_token_ids
        return 200, answer

    def models(self):
        return 200, {"object": "list", "data": [{"id": self.name, "object": "model", "owned_by": "kernel-studio"}]}


def _error(message, kind="invalid_request_error"):
    return {"error": {"message": message, "type": kind}}


def handler(server):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._send(*server.models())
            elif self.path.rstrip("/") in ("/health", "/v1/health"):
                self._send(200, {"status": "ok"})
            else:
                self._send(404, _error(f"no route {self.path}", "not_found"))

        def do_POST(self):
            if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                self._send(404, _error(f"no route {self.path}", "not_found"))
                return
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            except (json.JSONDecodeError, ValueError) as exc:
                self._send(400, _error(f"the request body is not JSON: {exc}"))
                return
            self._send(*server.complete(body if isinstance(body, dict) else {}))

        def _send(self, status, payload):
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, fmt, *args):
            log.info("%s %s", self.address_string(), fmt % args)

    return Handler


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m agent.serve", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", required=True, help="a local checkpoint folder (or a hub name, where reachable)")
    parser.add_argument("--name", help="the model name clients use (default: --model)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port (printed on start)")
    parser.add_argument("--device", default=None, help="torch device for the model (default: cuda if available)")
    parser.add_argument("--max-context", type=int, default=None, help="tokens (default: the model's)")
    parser.add_argument("--malformed", action="store_true", help="cut every tool call's arguments (invalid JSON)")
    parser.add_argument("--unavailable-first", type=int, default=0, help="answer 503 to the first N completions")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    policy = TransformersPolicy(args.model, device=args.device, max_context=args.max_context)
    server = Server(policy, args.name or args.model, args.malformed, args.unavailable_first)
    httpd = ThreadingHTTPServer((args.host, args.port), handler(server))
    host, port = httpd.server_address[:2]
    print(f"serving {args.model} as {server.name!r} on http://{host}:{port}/v1", flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
