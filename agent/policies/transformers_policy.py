"""The `transformers` policy: a local checkpoint through its chat template and `generate` (also what agent.serve
serves). Tool calls are read from the Hermes-style `<tool_call>` blocks the common chat templates produce."""

from dataclasses import dataclass

from agent.policies.base import (
    Action,
    ContextTooLong,
    Policy,
    PolicyUnavailable,
    parse_tool_calls,
    require,
    template_messages,
)


@dataclass
class Generation:
    text: str
    prompt_token_ids: list
    response_token_ids: list
    response_logprobs: list
    finish_reason: str


class TransformersPolicy(Policy):
    name = "transformers"

    def __init__(self, model, device=None, dtype="auto", temperature=0.0, max_new_tokens=4096, max_context=None):
        transformers = require("transformers", "train")
        torch = require("torch", "train")
        self.model = str(model)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(self.model)
            self.lm = transformers.AutoModelForCausalLM.from_pretrained(self.model, dtype=dtype).to(self.device).eval()
        except OSError as exc:
            raise PolicyUnavailable(f"cannot load the checkpoint {self.model}: {exc}") from None
        if not self.tokenizer.chat_template:
            raise PolicyUnavailable(f"{self.model} has no chat template: the transformers policy needs one with tools")
        self.temperature, self.max_new_tokens = temperature, max_new_tokens
        self.max_context = max_context or getattr(self.lm.config, "max_position_embeddings", None)

    def act(self, messages, tools):
        g = self.generate(messages, tools)
        content, calls = parse_tool_calls(g.text)
        return Action(
            thought=content,
            tool_calls=calls,
            finish_reason=g.finish_reason,
            prompt_tokens=len(g.prompt_token_ids),
            completion_tokens=len(g.response_token_ids),
            prompt_token_ids=g.prompt_token_ids,
            response_token_ids=g.response_token_ids,
            response_logprobs=g.response_logprobs,
        )

    def generate(self, messages, tools, max_new_tokens=None, temperature=None, prompt_ids=None):
        """The model's raw answer to MESSAGES, with the exact prompt and response tokens and their logprobs.
        PROMPT_IDS, when given, are MESSAGES already tokenized (a trainer continuing an episode token for token)."""
        prompt_ids, max_new_tokens = self.prompt(messages, tools, max_new_tokens, prompt_ids)
        return self.decode(prompt_ids, max_new_tokens, self.temperature if temperature is None else temperature)

    def prompt(self, messages, tools, max_new_tokens=None, prompt_ids=None):
        """(prompt ids, the answer's token budget) of MESSAGES; ContextTooLong when the prompt fills the context."""
        max_new_tokens = max_new_tokens or self.max_new_tokens
        if prompt_ids is None:
            prompt = self.tokenizer.apply_chat_template(
                template_messages(messages), tools=tools or None, add_generation_prompt=True, tokenize=False
            )
            prompt_ids = self.tokenizer(prompt, add_special_tokens=False)["input_ids"]
        if self.max_context and len(prompt_ids) >= self.max_context:
            raise ContextTooLong(
                f"This model's maximum context length is {self.max_context} tokens; the prompt has {len(prompt_ids)}"
            )
        if self.max_context:
            max_new_tokens = min(max_new_tokens, self.max_context - len(prompt_ids))
        return prompt_ids, max_new_tokens

    def decode(self, prompt_ids, max_new_tokens, temperature):
        """One sequence's Generation with `generate` (a trainer's policy batches many instead)."""
        import torch

        eos = self.lm.generation_config.eos_token_id or self.tokenizer.eos_token_id
        eos = set(eos if isinstance(eos, list) else [eos])
        sampling = {"do_sample": True, "temperature": temperature} if temperature > 0 else {"do_sample": False}
        inputs = torch.tensor([prompt_ids], device=self.device)
        with torch.no_grad():
            out = self.lm.generate(
                inputs,
                attention_mask=torch.ones_like(inputs),
                max_new_tokens=max_new_tokens,
                return_dict_in_generate=True,
                output_logits=True,
                eos_token_id=list(eos),
                pad_token_id=self.tokenizer.pad_token_id or min(eos),
                **sampling,
            )
        response = out.sequences[0, len(prompt_ids) :].tolist()
        logprobs = [
            torch.log_softmax(logits[0].float(), -1)[token].item() for logits, token in zip(out.logits, response)
        ]
        finished = bool(response) and response[-1] in eos
        body = response[:-1] if finished else response
        text = self.tokenizer.decode(body, skip_special_tokens=False)
        return Generation(text, prompt_ids, response, logprobs, "stop" if finished else "length")
