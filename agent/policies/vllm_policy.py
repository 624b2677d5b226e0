"""The `vllm` policy: vLLM in-process, for rollouts on a GPU worker (pip install 'kernel-studio[vllm]')."""

from agent.policies.base import Action, ContextTooLong, Policy, parse_tool_calls, require, template_messages


class VLLMPolicy(Policy):
    name = "vllm"

    def __init__(self, model, temperature=0.7, max_tokens=4096, **engine_args):
        self.vllm = require("vllm", "vllm")
        self.model = str(model)
        self.llm = self.vllm.LLM(model=self.model, **engine_args)
        self.tokenizer = self.llm.get_tokenizer()
        self.max_context = self.llm.llm_engine.model_config.max_model_len
        # Special tokens are kept in the text: some templates mark tool calls with them.
        self.sampling = dict(temperature=temperature, max_tokens=max_tokens, logprobs=0, skip_special_tokens=False)

    def act(self, messages, tools):
        prompt = self.tokenizer.apply_chat_template(
            template_messages(messages), tools=tools, add_generation_prompt=True, tokenize=False
        )
        prompt_ids = self.tokenizer(prompt, add_special_tokens=False)["input_ids"]
        if len(prompt_ids) >= self.max_context:
            raise ContextTooLong(
                f"This model's maximum context length is {self.max_context} tokens; the prompt has {len(prompt_ids)}"
            )
        params = self.vllm.SamplingParams(
            **{**self.sampling, "max_tokens": min(self.sampling["max_tokens"], self.max_context - len(prompt_ids))}
        )
        out = self.llm.generate([{"prompt_token_ids": prompt_ids}], params, use_tqdm=False)[0].outputs[0]
        ids = list(out.token_ids)
        text = out.text
        eos = self.tokenizer.eos_token
        if eos and text.endswith(eos):
            text = text[: -len(eos)]
        content, calls = parse_tool_calls(text)
        logprobs = [step[token].logprob for token, step in zip(ids, out.logprobs or [])] or None
        return Action(
            thought=content,
            tool_calls=calls,
            finish_reason=out.finish_reason or "",
            prompt_tokens=len(prompt_ids),
            completion_tokens=len(ids),
            prompt_token_ids=prompt_ids,
            response_token_ids=ids,
            response_logprobs=logprobs,
        )
