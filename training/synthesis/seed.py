"""One seed of the catalogue (an operator the composer may stack, as templates over `x`) and the vocabulary of
layouts, input domains, dtypes and operator classes that the catalogue, the composer and the blocks share."""

from dataclasses import asdict, dataclass

# Rank of the running tensor without its batch dimension -> the layout the composer tracks.
LAYOUTS = {-1: "scalar", 0: "vector", 1: "features", 2: "sequence", 3: "image", 4: "volume"}
# Shapes the crawl probes with (batch first); sizes differ from each other so a seed that only "works"
# by mistaking one dimension for another is caught.
PROBE_SHAPES = {"features": (2, 12), "sequence": (2, 6, 12), "image": (2, 4, 6, 6), "volume": (2, 4, 4, 6, 6)}
# Input domains, narrowest last: a seed accepts a running tensor whose range lies inside its domain.
DOMAINS = ("real", "positive", "prob")
DTYPES = ("float32", "bfloat16", "float16")

# Operator classes the catalogue and the dataset summary use.
CLASSES = (
    "activation",
    "elementwise",
    "binary",
    "reduction",
    "scan",
    "softmax",
    "normalization",
    "convolution",
    "linear",
    "pooling",
    "layout",
    "padding",
    "upsampling",
    "loss",
    "recurrent",
    "attention",
    "mlp",
    "rotary",
    "moe",
)


@dataclass
class Seed:
    """One operator the composer may stack: templates over `x`, and what the crawl learned about it.

    Variables in templates: $p (a unique attribute prefix), $y (a second operand: a parameter or an extra
    input), $C (channels: the first non-batch dim), $D (the last dim), $L (the second-last dim), $N (a new
    feature size), $NC (a new channel count), $G (groups dividing $C), $NH / $KV / $HD (heads, key-value heads
    and head size for $D).
    """

    name: str
    op_class: str
    origin: str  # torch | torch.nn.functional | torch.nn | transformers | blocks
    forward: str
    init: str = ""
    helper: str = ""  # module-level code (a class or function) the templates use
    layouts: tuple = ("features", "sequence", "image", "volume")
    domain: str = "real"
    out_range: str = "real"
    dtypes: tuple = ("float32",)
    operand: str = ""  # "", "broadcast" (a parameter or input broadcast over x) or "full" (an input like x)
    terminal: bool = False  # its output (a scalar) ends a chain
    stochastic: bool = False

    def to_json(self):
        return asdict(self)

    @classmethod
    def from_json(cls, data):
        data = dict(data)
        for key in ("layouts", "dtypes"):
            data[key] = tuple(data[key])
        return cls(**data)

    def describe(self):
        """The catalogue entry a person reads: class, how it is built, valid input shapes and dtypes."""
        return {
            "name": self.name,
            "class": self.op_class,
            "origin": self.origin,
            "build": "\n".join(line for line in (self.init, self.forward) if line),
            "inputs": {layout: list(PROBE_SHAPES[layout]) for layout in self.layouts if layout in PROBE_SHAPES},
            "domain": self.domain,
            "dtypes": list(self.dtypes),
            "stochastic": self.stochastic,
        }
