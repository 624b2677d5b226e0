"""Composition: stack 1-5 seeds into a KernelBench-format problem whose shapes flow.

Each seed is instantiated for the running tensor's shape (parameters sized to fit, second operands broadcast
or drawn as extra inputs) and the growing problem is traced on the meta device after every step: shape
inference is PyTorch's own, costs no memory, and a step that does not fit is replaced by another. Sizes come
from a profile per target; the runner rescales `batch_size` afterwards to land in the eager-time window.
"""

import re
import textwrap
import warnings
from dataclasses import asdict, dataclass, field

from training.synthesis.seed import DOMAINS, LAYOUTS


@dataclass(frozen=True)
class Profile:
    """Sizes a composition draws from, and the budgets that keep a task's memory bounded."""

    batch: int
    features: tuple  # D of a (B, D) input
    sequence: tuple  # (L choices, D choices)
    image: tuple  # (C choices, H=W choices)
    volume: tuple  # (C choices, D=H=W choices)
    new_features: tuple
    new_channels: tuple
    max_params: int
    max_elements: int  # per sample, of any intermediate tensor


PROFILES = {
    "tiny": Profile(
        2, (8, 16, 32), ((4, 8), (8, 16)), ((2, 4), (6, 8)), ((2,), (4,)), (8, 16), (4, 8), 200_000, 1 << 15
    ),
    "cpu": Profile(
        8,
        (128, 256, 512),
        ((32, 64), (64, 128)),
        ((8, 16), (16, 32)),
        ((4,), (8,)),
        (64, 128, 256),
        (8, 16, 32),
        4_000_000,
        1 << 19,
    ),
    "cuda": Profile(
        32,
        (1024, 2048, 4096),
        ((128, 256, 512), (256, 512, 1024)),
        ((16, 32, 64), (32, 64)),
        ((8, 16), (16, 32)),
        (512, 1024, 2048),
        (32, 64, 128),
        64_000_000,
        1 << 22,
    ),
}
DEPTH_WEIGHTS = {1: 1, 2: 2, 3: 3, 4: 2, 5: 1}
HEADER = "import math\n\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
_VAR = re.compile(r"\$(NC|NH|KV|HD|N|C|D|L|G|p|y)")
_BATCH = re.compile(r"^batch_size = (\d+)$", re.M)


class CompositionError(Exception):
    """No seed fits where the composer needed one; the message says where."""


@dataclass
class Input:
    name: str
    dims: tuple  # without the batch dimension when batched
    domain: str = "real"
    batched: bool = True


@dataclass
class Step:
    seed: str
    op_class: str
    init: list
    forward: list
    helper: str = ""
    inputs: list = field(default_factory=list)  # extra Inputs this step reads


@dataclass
class Candidate:
    """A composed problem before filtering: its source and what it was made of."""

    name: str
    source: str
    seeds: list
    op_classes: list
    depth: int
    composer: str = "program"
    dtype: str = "float32"

    def to_json(self):
        return asdict(self)

    @classmethod
    def from_json(cls, data):
        return cls(**data)


def _variables(template, dims, rng, profile):
    names = set(_VAR.findall(template))
    values = {}
    if names & {"C", "G"}:
        if not dims:
            raise CompositionError("no channel dimension")
        values["C"] = dims[0]
    if "D" in names or names & {"NH", "KV", "HD"}:
        if not dims:
            raise CompositionError("no feature dimension")
        values["D"] = dims[-1]
    if "L" in names:
        if len(dims) < 2:
            raise CompositionError("no sequence dimension")
        values["L"] = dims[-2]
    if "N" in names:
        values["N"] = rng.choice(profile.new_features)
    if "NC" in names:
        values["NC"] = rng.choice(profile.new_channels)
    if "G" in names:
        values["G"] = rng.choice([g for g in (2, 4, 8) if values["C"] % g == 0] or [1])
    if names & {"NH", "KV", "HD"}:
        heads = [h for h in (2, 4, 8) if values["D"] % h == 0 and (values["D"] // h) % 2 == 0]
        if not heads:
            raise CompositionError(f"no head count divides {values['D']} into even head sizes")
        values["NH"] = rng.choice(heads)
        values["HD"] = values["D"] // values["NH"]
        values["KV"] = rng.choice([k for k in (1, values["NH"] // 2) if k >= 1 and values["NH"] % k == 0])
    return values


def _fill(text, values):
    return _VAR.sub(lambda m: str(values[m.group(1)]), text)


def _draw_expr(shape_expr, domain, dtype):
    kw = "" if dtype == "float32" else f", dtype=torch.{dtype}"
    if domain == "real":
        return f"torch.randn({shape_expr}{kw})"
    if domain == "positive":
        return f"(torch.rand({shape_expr}{kw}) + 0.1)"
    return f"(torch.rand({shape_expr}{kw}) * 0.98 + 0.01)"


def instantiate(seed, shape, rng, profile, prefix, operand_name):
    """SEED as a Step for a running tensor of SHAPE (batch first); CompositionError when it cannot fit."""
    profile = PROFILES[profile] if isinstance(profile, str) else profile
    dims = tuple(shape[1:])
    text = "\n".join((seed.init, seed.forward))
    values = _variables(text, dims, rng, profile)
    values["p"] = prefix
    inputs, init = [], []
    if "$y" in text:
        if seed.operand == "full" or rng.random() < 0.4:
            values["y"] = operand_name
            inputs.append(Input(operand_name, dims, seed.domain, True))
        else:
            bshape = (dims[0],) + (1,) * (len(dims) - 1) if len(dims) >= 2 and rng.random() < 0.5 else dims[-1:]
            if rng.random() < 0.5:
                values["y"] = f"self.{prefix}_y"
                draw = _draw_expr(repr(tuple(bshape)), seed.domain, "float32")
                init.append(f"self.{prefix}_y = nn.Parameter({draw})")
            else:
                values["y"] = operand_name
                inputs.append(Input(operand_name, tuple(bshape), seed.domain, False))
    init += [_fill(line, values) for line in seed.init.splitlines() if line.strip()]
    forward = [_fill(line, values) for line in seed.forward.splitlines() if line.strip()]
    return Step(seed.name, seed.op_class, init, forward, seed.helper, inputs)


def render(name, inputs, steps, batch, dtype="float32", doc=""):
    """The KernelBench-format source of a plan: Model, batch_size, get_inputs(), get_init_inputs()."""
    helpers = []
    for step in steps:
        if step.helper and step.helper not in helpers:
            helpers.append(step.helper)
    all_inputs = list(inputs) + [i for s in steps for i in s.inputs]
    init = [line for s in steps for line in s.init]
    if dtype != "float32":
        init.append(f"self.to(torch.{dtype})")
    forward = [line for s in steps for line in s.forward]
    body = "\n".join(["    def __init__(self):", "        super().__init__()"] + [f"        {line}" for line in init])
    args = ", ".join(i.name for i in all_inputs)
    draws = []
    for i in all_inputs:
        shape = ", ".join(["batch_size"] * i.batched + [str(d) for d in i.dims])
        draws.append(_draw_expr(shape, i.domain, dtype))
    parts = [f'"""{doc or name}"""', HEADER]
    parts += [h.strip() + "\n" for h in helpers]
    parts.append(
        f"class Model(nn.Module):\n{body}\n\n    def forward(self, {args}):\n"
        + "\n".join(f"        {line}" for line in forward)
        + "\n        return x\n"
    )
    parts.append(f"batch_size = {batch}\n")
    parts.append("def get_inputs():\n    return [" + ", ".join(draws) + "]\n")
    parts.append("def get_init_inputs():\n    return []\n")
    return "\n\n".join(parts)


def trace(source, device="meta", seed=0, forward_seed=None):
    """Run SOURCE (trusted: made from catalogue templates) on DEVICE: (output, model, inputs).

    FORWARD_SEED reseeds the generator between drawing the inputs and the forward: a stochastic forward
    then differs between two traces with the same SEED.
    """
    import torch

    namespace = {"__name__": "ks_synthesized"}
    exec(compile(source, "<synthesized>", "exec"), namespace)  # noqa: S102 -- our own templates only
    # The CPU generator alone: torch.manual_seed also walks every accelerator's lazy-init queue, slowly.
    torch.random.default_generator.manual_seed(seed)
    with torch.device(device):
        model = namespace["Model"](*namespace["get_init_inputs"]())
        inputs = namespace["get_inputs"]()
    if forward_seed is not None:
        torch.random.default_generator.manual_seed(forward_seed)
    with torch.no_grad():
        out = model(*inputs)
    return out, model, inputs


def probe_step(step, shape, domain, dtype="float32", seed=0, forward_seed=None):
    """Run one step on the CPU at SHAPE (the crawl's check that a seed works): (output, model, inputs)."""
    source = render("probe", [Input("x", tuple(shape[1:]), domain)], [step], shape[0], dtype)
    return trace(source, "cpu", seed, forward_seed)


def _fits(seed, layout, rng_range, dtype, last, allow_stochastic):
    return (
        layout in seed.layouts
        and DOMAINS.index(rng_range) >= DOMAINS.index(seed.domain)
        and dtype in seed.dtypes
        and (last or not seed.terminal)
        and (allow_stochastic or not seed.stochastic)
    )


def _pick(rng, seeds, classes):
    """A class first, then a seed in it: the hundred unary math functions do not crowd out the rest."""
    by_class = {}
    for s in seeds:
        if not classes or s.op_class in classes:
            by_class.setdefault(s.op_class, []).append(s)
    if not by_class:
        return None
    return rng.choice(by_class[rng.choice(sorted(by_class))])


def _first_shape(layout, rng, profile):
    if layout == "features":
        return (rng.choice(profile.features),)
    if layout == "sequence":
        return (rng.choice(profile.sequence[0]), rng.choice(profile.sequence[1]))
    if layout == "image":
        hw = rng.choice(profile.image[1])
        return (rng.choice(profile.image[0]), hw, hw)
    c, d = rng.choice(profile.volume[0]), rng.choice(profile.volume[1])
    return (c, d, d, d)


def compose(rng, seeds, profile="tiny", depth=None, dtype="float32", classes=(), allow_stochastic=False, tries=40):
    """A Candidate of DEPTH (drawn 1-5 when None) seeds whose shapes flow, traced on the meta device."""
    import torch

    prof = PROFILES[profile] if isinstance(profile, str) else profile
    depth = depth or draw_depth(rng)
    inputs, steps, chosen = [], [], []
    layout = shape = None
    value_range = "real"
    for index in range(depth):
        last = index == depth - 1
        for _ in range(tries):
            if not steps:
                pool = [
                    s
                    for s in seeds
                    if (allow_stochastic or not s.stochastic)
                    and dtype in s.dtypes
                    and (last or not s.terminal)
                    and any(lay in s.layouts for lay in LAYOUTS.values())
                ]
                seed = _pick(rng, pool, classes)
                if seed is None:
                    raise CompositionError(f"no seed in the catalogue fits classes {classes or 'any'} and {dtype}")
                layout_try = rng.choice(
                    [lay for lay in seed.layouts if lay in ("features", "sequence", "image", "volume")]
                )
                first = Input("x", _first_shape(layout_try, rng, prof), seed.domain)
                try_inputs, shape_try = [first], (prof.batch,) + first.dims
            else:
                pool = [s for s in seeds if _fits(s, layout, value_range, dtype, last, allow_stochastic)]
                seed = _pick(rng, pool, ())
                if seed is None:
                    break
                try_inputs, shape_try = inputs, shape
            try:
                step = instantiate(seed, shape_try, rng, prof, f"s{index}", f"y{sum(len(s.inputs) for s in steps) + 1}")
                source = render("trace", try_inputs, steps + [step], prof.batch, dtype)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # deprecations of odd-but-valid uses (dropout2d on 2-D, ...)
                    out, model, _ = trace(source)
            except CompositionError:
                continue
            except Exception:  # noqa: BLE001 -- the seed does not fit this shape: draw another
                continue
            if not isinstance(out, torch.Tensor):
                continue
            params = sum(p.numel() for p in model.parameters())
            per_sample = out.numel() // max(1, prof.batch)
            if params > prof.max_params or per_sample > prof.max_elements or out.numel() == 0:
                continue
            inputs, steps = try_inputs, steps + [step]
            chosen.append(seed)
            shape = tuple(out.shape)
            layout = LAYOUTS.get(out.dim() - 1, "")
            value_range = seed.out_range
            break
        else:
            break
        if layout == "scalar" or seed is None:
            break
    if not steps:
        raise CompositionError("no seed fitted as the first operator; is the catalogue empty?")
    names = [s.name for s in chosen]
    title = "_".join(re.sub(r"\W+", "", n.split(".")[-1]) for n in names)
    doc = f"Fused: {' -> '.join(names)}."
    return Candidate(
        title,
        render(title, inputs, steps, prof.batch, dtype, doc),
        names,
        [s.op_class for s in chosen],
        len(steps),
        "program",
        dtype,
    )


def draw_depth(rng, max_depth=5):
    """A fusion depth in 1..MAX_DEPTH, middle depths likelier (DEPTH_WEIGHTS)."""
    depths = [d for d in DEPTH_WEIGHTS if d <= max_depth] or [1]
    return rng.choices(depths, weights=[DEPTH_WEIGHTS[d] for d in depths])[0]


def batch_of(source):
    m = _BATCH.search(source)
    return int(m.group(1)) if m else None


def rescale(source, factor, limit=1 << 16):
    """SOURCE with batch_size scaled by FACTOR (None when it has no top-level batch_size or nothing changes)."""
    batch = batch_of(source)
    if batch is None:
        return None
    new = int(max(1, min(limit, round(batch * factor))))
    if new == batch:
        return None
    return _BATCH.sub(f"batch_size = {new}", source, count=1)


# -- the LLM-assisted composer ---------------------------------------------------------------------------

SUBMIT_TOOL = {
    "type": "function",
    "function": {
        "name": "submit_problem",
        "description": "Submit the complete KernelBench problem file.",
        "parameters": {"type": "object", "properties": {"source": {"type": "string"}}, "required": ["source"]},
    },
}

LLM_PROMPT = textwrap.dedent("""\
    Write a KernelBench problem: one Python file defining `class Model(nn.Module)` whose forward fuses these
    operators, in this order, into one layer: {ops}. Shapes must flow from one operator to the next (size
    parameters to fit). Define `batch_size = ...` at module level and use it as the first dimension of every
    input; `get_inputs()` returns the input tensors (float32, drawn with torch.randn/torch.rand) and
    `get_init_inputs()` returns the constructor arguments. Only import torch and math. No dropout, no
    randomness in forward. Call submit_problem with the whole file.""")


class LLMComposer:
    """Asks a policy back-end (agent.policies, OpenAI-compatible) to fuse seeds the program picked.

    Its sources are untrusted: they are never run here, only in the sandbox's jail by the filters.
    """

    def __init__(self, policy):
        self.policy = policy

    def compose(self, rng, seeds, depth=None, classes=()):
        depth = depth or draw_depth(rng)
        pool = [s for s in seeds if not s.stochastic and not s.terminal]
        chosen = [_pick(rng, pool, classes) for _ in range(depth)]
        ops = ", ".join(f"{s.name} ({s.op_class}: {s.forward.strip()})" for s in chosen)
        messages = [
            {"role": "system", "content": "You write PyTorch reference problems for kernel benchmarks."},
            {"role": "user", "content": LLM_PROMPT.format(ops=ops)},
        ]
        action = self.policy.act(messages, [SUBMIT_TOOL])
        source = extract_source(action)
        if source is None:
            raise CompositionError(f"the policy answered without a problem file: {action.thought[:300]!r}")
        title = "llm_" + "_".join(re.sub(r"\W+", "", s.name.split(".")[-1]) for s in chosen)
        return Candidate(title, source, [s.name for s in chosen], [s.op_class for s in chosen], depth, "llm")


def extract_source(action):
    """The problem file from a submit_problem call, or from a ```python block in the reply."""
    for call in action.tool_calls:
        if call.name == "submit_problem" and isinstance(call.arguments, dict) and call.arguments.get("source"):
            return call.arguments["source"]
    m = re.search(r"```(?:python)?\n(.*?)```", action.thought or "", re.S)
    if m and "class Model" in m.group(1):
        return m.group(1)
    return None
