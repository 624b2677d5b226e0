"""Transformer building blocks as seeds: activations and norms crawled from transformers (their source inlined,
so a task imports only torch), plus attention variants, MLPs, rotary embeddings and mixtures of experts
written after the transformers implementations they name. Small configurations, built offline, no weights.
"""

import importlib
import inspect
import logging
import re
import textwrap

from training.synthesis.seed import Seed

log = logging.getLogger(__name__)

# Model families whose modeling files hold the norms worth crawling (each import costs a fraction of a second).
NORM_FAMILIES = (
    "llama",
    "mistral",
    "qwen2",
    "qwen3",
    "gemma",
    "gemma2",
    "gemma3",
    "t5",
    "cohere",
    "olmo2",
    "phi3",
    "mixtral",
    "granite",
    "deepseek_v3",
    "mamba",
    "nemotron",
)


def _inline(cls):
    """The class's source without decorators, or None when it does not even define here (a base class we lack);
    one that reaches for other globals fails the probe instead."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return None
    lines = source.splitlines()
    while lines and lines[0].lstrip().startswith("@"):
        lines.pop(0)
    source = "\n".join(lines)
    namespace = {}
    prelude = (
        "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nfrom torch import Tensor\n"
    )
    try:
        exec(compile(prelude + source, "<inline>", "exec"), namespace)  # noqa: S102 -- transformers' own code
    except Exception:  # noqa: BLE001 -- base classes or globals we cannot provide
        return None
    return ("from torch import Tensor\n\n" if "Tensor" in source else "") + source


def _activation_seeds():
    try:
        from transformers.activations import ACT2CLS
    except ImportError:
        return []
    seeds = []
    for key, entry in sorted(ACT2CLS.items()):
        cls, kwargs = entry if isinstance(entry, tuple) else (entry, {})
        if not cls.__module__.startswith("transformers"):
            continue  # torch.nn's own classes come from the torch crawl
        helper = _inline(cls)
        if helper is None:
            continue
        args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        seeds.append(
            Seed(
                f"transformers.act.{key}",
                "activation",
                "transformers",
                "x = self.$p(x)",
                init=f"self.$p = {cls.__name__}({args})",
                helper=helper,
            )
        )
    return seeds


def _norm_seeds():
    seeds, bodies = [], set()
    for family in NORM_FAMILIES:
        try:
            module = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
        except Exception:  # noqa: BLE001 -- a family this transformers version lacks or cannot import
            continue
        for name, cls in sorted(vars(module).items()):
            if not (isinstance(cls, type) and "Norm" in name and cls.__module__ == module.__name__):
                continue
            try:
                first = list(inspect.signature(cls.__init__).parameters)[1]
            except (TypeError, ValueError, IndexError):
                continue
            if first not in ("hidden_size", "dim", "normalized_shape"):
                continue
            helper = _inline(cls)
            body = helper and re.sub(rf"\b{name}\b", "X", helper)
            if helper is None or body in bodies:
                continue
            bodies.add(body)
            seeds.append(
                Seed(
                    f"transformers.{name}",
                    "normalization",
                    "transformers",
                    "x = self.$p(x)",
                    init=f"self.$p = {name}($D)",
                    helper=helper,
                    layouts=("features", "sequence"),
                )
            )
    return seeds


# -- blocks written after transformers' implementations ------------------------------------------------------

ROTARY = '''
def rotate_half(x):
    """LLaMA's rotary helper: (x1, x2) -> (-x2, x1) over the last dimension."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rotary_tables(length, dim, base=10000.0):
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    freqs = torch.outer(torch.arange(length, dtype=torch.float32), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()
'''

BLOCKS = [
    (
        "blocks.llama_mlp",
        "mlp",
        '''
class LlamaMLP(nn.Module):
    """LLaMA / Mistral / Qwen2 MLP: down_proj(silu(gate_proj(x)) * up_proj(x))."""

    def __init__(self, hidden, inter):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inter, bias=False)
        self.up_proj = nn.Linear(hidden, inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))
''',
        "self.$p = LlamaMLP($D, $N)",
    ),
    (
        "blocks.t5_gated_gelu_mlp",
        "mlp",
        '''
class T5DenseGatedActDense(nn.Module):
    """T5 v1.1 feed-forward: wo(gelu_new(wi_0(x)) * wi_1(x))."""

    def __init__(self, d_model, d_ff):
        super().__init__()
        self.wi_0 = nn.Linear(d_model, d_ff, bias=False)
        self.wi_1 = nn.Linear(d_model, d_ff, bias=False)
        self.wo = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.wo(F.gelu(self.wi_0(x), approximate="tanh") * self.wi_1(x))
''',
        "self.$p = T5DenseGatedActDense($D, $N)",
    ),
    (
        "blocks.gpt2_mlp",
        "mlp",
        '''
class GPT2MLP(nn.Module):
    """GPT-2 MLP: c_proj(gelu_new(c_fc(x)))."""

    def __init__(self, embed_dim, inner_dim):
        super().__init__()
        self.c_fc = nn.Linear(embed_dim, inner_dim)
        self.c_proj = nn.Linear(inner_dim, embed_dim)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))
''',
        "self.$p = GPT2MLP($D, $N)",
    ),
    (
        "blocks.bert_ffn",
        "mlp",
        '''
class BertFeedForward(nn.Module):
    """BERT intermediate + output: LayerNorm(dense2(gelu(dense1(x))) + x)."""

    def __init__(self, hidden, inter):
        super().__init__()
        self.intermediate = nn.Linear(hidden, inter)
        self.output = nn.Linear(inter, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x):
        return self.norm(self.output(F.gelu(self.intermediate(x))) + x)
''',
        "self.$p = BertFeedForward($D, $N)",
    ),
    (
        "blocks.relu2_mlp",
        "mlp",
        '''
class ReLUSquaredMLP(nn.Module):
    """Primer / Nemotron MLP: down(relu(up(x)) ** 2)."""

    def __init__(self, hidden, inter):
        super().__init__()
        self.up_proj = nn.Linear(hidden, inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)

    def forward(self, x):
        return self.down_proj(torch.square(F.relu(self.up_proj(x))))
''',
        "self.$p = ReLUSquaredMLP($D, $N)",
    ),
    (
        "blocks.mha",
        "attention",
        '''
class MultiHeadSelfAttention(nn.Module):
    """BERT-style self-attention with the softmax written out: softmax(q k^T / sqrt(d)) v, then o_proj."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.o_proj = nn.Linear(hidden, hidden)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        out = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.o_proj(out.transpose(1, 2).reshape(b, n, -1))
''',
        "self.$p = MultiHeadSelfAttention($D, $NH)",
    ),
    (
        "blocks.causal_sdpa_attention",
        "attention",
        '''
class CausalSelfAttention(nn.Module):
    """GPT-2 / nanoGPT causal attention through F.scaled_dot_product_attention."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(hidden, 3 * hidden)
        self.c_proj = nn.Linear(hidden, hidden)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (t.view(b, n, self.heads, c // self.heads).transpose(1, 2) for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(out.transpose(1, 2).reshape(b, n, c))
''',
        "self.$p = CausalSelfAttention($D, $NH)",
    ),
    (
        "blocks.gqa_rotary_attention",
        "attention",
        ROTARY
        + '''

def repeat_kv(x, n_rep):
    """LLaMA's repeat_kv: (b, kv_heads, n, d) -> (b, kv_heads * n_rep, n, d)."""
    b, kv, n, d = x.shape
    return x[:, :, None].expand(b, kv, n_rep, n, d).reshape(b, kv * n_rep, n, d)


class LlamaAttention(nn.Module):
    """LLaMA grouped-query attention: rotary q and k, repeated kv heads, causal softmax."""

    def __init__(self, hidden, heads, kv_heads, length):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.q_proj = nn.Linear(hidden, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, hidden, bias=False)
        cos, sin = rotary_tables(length, self.head_dim)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, x):
        b, n, _ = x.shape
        q = self.q_proj(x).view(b, n, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, n, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, n, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * self.cos + rotate_half(q) * self.sin
        k = k * self.cos + rotate_half(k) * self.sin
        k, v = repeat_kv(k, self.heads // self.kv_heads), repeat_kv(v, self.heads // self.kv_heads)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        mask = torch.triu(torch.ones(n, n, dtype=torch.bool, device=x.device), diagonal=1)
        weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
        return self.o_proj(torch.matmul(weights, v).transpose(1, 2).reshape(b, n, -1))
''',
        "self.$p = LlamaAttention($D, $NH, $KV, $L)",
    ),
    (
        "blocks.mqa_attention",
        "attention",
        '''
class MultiQueryAttention(nn.Module):
    """Falcon / PaLM multi-query attention: many query heads, one shared key and value head."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.q_proj = nn.Linear(hidden, hidden)
        self.kv_proj = nn.Linear(hidden, 2 * self.head_dim)
        self.o_proj = nn.Linear(hidden, hidden)

    def forward(self, x):
        b, n, _ = x.shape
        q = self.q_proj(x).view(b, n, self.heads, self.head_dim).transpose(1, 2)
        k, v = self.kv_proj(x).unsqueeze(1).chunk(2, dim=-1)
        out = F.scaled_dot_product_attention(q, k.expand_as(q), v.expand_as(q))
        return self.o_proj(out.transpose(1, 2).reshape(b, n, -1))
''',
        "self.$p = MultiQueryAttention($D, $NH)",
    ),
    (
        "blocks.sliding_window_attention",
        "attention",
        '''
class SlidingWindowAttention(nn.Module):
    """Mistral-style causal attention restricted to the last `window` positions."""

    def __init__(self, hidden, heads, window):
        super().__init__()
        self.heads, self.head_dim, self.window = heads, hidden // heads, window
        self.qkv = nn.Linear(hidden, 3 * hidden, bias=False)
        self.o_proj = nn.Linear(hidden, hidden, bias=False)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        i = torch.arange(n, device=x.device)
        allowed = (i[None, :] <= i[:, None]) & (i[:, None] - i[None, :] < self.window)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        return self.o_proj(out.transpose(1, 2).reshape(b, n, -1))
''',
        "self.$p = SlidingWindowAttention($D, $NH, max(2, $L // 4))",
    ),
    (
        "blocks.alibi_attention",
        "attention",
        '''
class AlibiAttention(nn.Module):
    """BLOOM / MPT attention: linear position biases per head (ALiBi) instead of position embeddings."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.dense = nn.Linear(hidden, hidden)
        slopes = torch.tensor([2.0 ** (-8.0 * (h + 1) / heads) for h in range(heads)])
        self.register_buffer("slopes", slopes.view(heads, 1, 1), persistent=False)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        pos = torch.arange(n, device=x.device)
        bias = self.slopes * (pos[None, :] - pos[:, None]).clamp(max=0)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim) + bias
        return self.dense(torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, n, -1))
''',
        "self.$p = AlibiAttention($D, $NH)",
    ),
    (
        "blocks.qk_norm_attention",
        "attention",
        '''
class QKNormAttention(nn.Module):
    """Qwen3 / OLMo2 attention: RMS-normalized queries and keys per head before the dot product."""

    def __init__(self, hidden, heads, eps=1e-6):
        super().__init__()
        self.heads, self.head_dim, self.eps = heads, hidden // heads, eps
        self.qkv = nn.Linear(hidden, 3 * hidden, bias=False)
        self.q_norm = nn.Parameter(torch.ones(self.head_dim))
        self.k_norm = nn.Parameter(torch.ones(self.head_dim))
        self.o_proj = nn.Linear(hidden, hidden, bias=False)

    def rms(self, t, weight):
        return weight * t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(self.rms(q, self.q_norm), self.rms(k, self.k_norm), v, is_causal=True)
        return self.o_proj(out.transpose(1, 2).reshape(b, n, -1))
''',
        "self.$p = QKNormAttention($D, $NH)",
    ),
    (
        "blocks.llama_rotary",
        "rotary",
        ROTARY
        + '''

class RotaryEmbedding(nn.Module):
    """LLaMA rotary position embedding applied to a (b, n, d) sequence: x cos + rotate_half(x) sin."""

    def __init__(self, dim, length):
        super().__init__()
        cos, sin = rotary_tables(length, dim)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, x):
        return x * self.cos + rotate_half(x) * self.sin
''',
        "self.$p = RotaryEmbedding($D, $L)",
    ),
    (
        "blocks.neox_partial_rotary",
        "rotary",
        ROTARY
        + '''

class PartialRotaryEmbedding(nn.Module):
    """GPT-NeoX / Phi partial rotary: only the first `rotary_dim` features rotate, the rest pass through."""

    def __init__(self, dim, length, fraction=0.5):
        super().__init__()
        self.rotary_dim = int(dim * fraction) // 2 * 2
        cos, sin = rotary_tables(length, self.rotary_dim)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, x):
        rot, rest = x[..., :self.rotary_dim], x[..., self.rotary_dim:]
        return torch.cat((rot * self.cos + rotate_half(rot) * self.sin, rest), dim=-1)
''',
        "self.$p = PartialRotaryEmbedding($D, $L)",
    ),
    (
        "blocks.gptj_interleaved_rotary",
        "rotary",
        '''
class InterleavedRotaryEmbedding(nn.Module):
    """GPT-J rotary: adjacent feature pairs (x0, x1) rotate together."""

    def __init__(self, dim, length, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
        freqs = torch.outer(torch.arange(length, dtype=torch.float32), inv_freq)
        self.register_buffer("cos", freqs.cos().repeat_interleave(2, dim=-1), persistent=False)
        self.register_buffer("sin", freqs.sin().repeat_interleave(2, dim=-1), persistent=False)

    def forward(self, x):
        x1, x2 = x[..., ::2], x[..., 1::2]
        rotated = torch.stack((-x2, x1), dim=-1).flatten(-2)
        return x * self.cos + rotated * self.sin
''',
        "self.$p = InterleavedRotaryEmbedding($D, $L)",
    ),
    (
        "blocks.dense_moe",
        "moe",
        '''
class DenseMoE(nn.Module):
    """Mixtral-style mixture of SwiGLU experts with top-2 softmax gating, computed densely (no token dispatch)."""

    def __init__(self, hidden, inter, experts=4, top_k=2):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(hidden, experts, bias=False)
        self.w1 = nn.Parameter(torch.randn(experts, hidden, inter) / math.sqrt(hidden))
        self.w3 = nn.Parameter(torch.randn(experts, hidden, inter) / math.sqrt(hidden))
        self.w2 = nn.Parameter(torch.randn(experts, inter, hidden) / math.sqrt(inter))

    def forward(self, x):
        logits = self.gate(x)
        top = torch.topk(logits, self.top_k, dim=-1).values[..., -1:]
        weights = torch.softmax(logits.masked_fill(logits < top, float("-inf")), dim=-1)
        h = F.silu(torch.einsum("...d,edf->...ef", x, self.w1)) * torch.einsum("...d,edf->...ef", x, self.w3)
        return torch.einsum("...ef,efd,...e->...d", h, self.w2, weights)
''',
        "self.$p = DenseMoE($D, $N // 4)",
    ),
]


def _block_seeds():
    seeds = []
    for name, op_class, helper, init in BLOCKS:
        seeds.append(
            Seed(
                name,
                op_class,
                "blocks",
                "x = self.$p(x)",
                init=init,
                helper=textwrap.dedent(helper).strip(),
                layouts=("sequence",) if op_class in ("attention", "rotary") else ("features", "sequence"),
            )
        )
    return seeds


def transformers_seeds(probe):
    """The transformers-derived seeds that PROBE (seeds._probe_operator) finds computing something."""
    found = []
    for seed in _activation_seeds() + _norm_seeds() + _block_seeds():
        probed = probe(seed)
        if probed is None:
            log.info("seed %s does not run here; left out", seed.name)
            continue
        found.append(probed)
    return found
