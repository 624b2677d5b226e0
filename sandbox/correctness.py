"""Comparing a candidate's outputs with the reference: shapes, dtypes, NaN/Inf and tolerances, worst error."""
from dataclasses import asdict, dataclass


@dataclass
class Comparison:
    ok: bool
    reason: str = ""
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    mismatched: int = 0
    compared: int = 0

    def to_json(self):
        return asdict(self)


def compare(reference, candidate, atol, rtol):
    """Compare two lists of tensors element-wise, allclose-style: |c - r| <= atol + rtol * |r|."""
    import torch
    if len(reference) != len(candidate):
        return Comparison(False, f"expected {len(reference)} output tensor(s), got {len(candidate)}")
    worst = Comparison(True)
    for i, (ref, out) in enumerate(zip(reference, candidate)):
        where = f"output {i}" if len(reference) > 1 else "output"
        if tuple(ref.shape) != tuple(out.shape):
            return Comparison(False, f"{where}: expected shape {tuple(ref.shape)}, got {tuple(out.shape)}")
        if ref.dtype != out.dtype:
            return Comparison(False, f"{where}: expected dtype {ref.dtype}, got {out.dtype}")
        out = out.to(ref.device)
        r, c = ref.double() if ref.is_floating_point() else ref.long(), out.double() if out.is_floating_point() else out.long()
        finite_ref = torch.isfinite(r) if r.is_floating_point() else torch.ones_like(r, dtype=torch.bool)
        if r.is_floating_point():
            bad = ~torch.isfinite(c) & finite_ref
            if bool(bad.any()):
                return Comparison(False, f"{where}: {int(bad.sum())} NaN/Inf value(s) where the reference is finite",
                                  mismatched=int(bad.sum()), compared=c.numel())
            special = ~finite_ref
            if bool(special.any()) and not bool(torch.equal(r[special].nan_to_num(0.0, 1.0, -1.0),
                                                            c[special].nan_to_num(0.0, 1.0, -1.0))):
                return Comparison(False, f"{where}: NaN/Inf positions or signs differ from the reference")
            r, c = r[finite_ref], c[finite_ref]
        diff = (c - r).abs()
        allowed = atol + rtol * r.abs()
        mismatched = int((diff > allowed).sum())
        max_abs = float(diff.max()) if diff.numel() else 0.0
        max_rel = float((diff / r.abs().clamp_min(1e-12)).max()) if diff.numel() else 0.0
        worst.max_abs_error = max(worst.max_abs_error, max_abs)
        worst.max_rel_error = max(worst.max_rel_error, max_rel)
        worst.compared += diff.numel()
        worst.mismatched += mismatched
        if mismatched:
            worst.ok = False
            worst.reason = worst.reason or (f"{where}: {mismatched} of {diff.numel()} values outside "
                                            f"atol={atol}, rtol={rtol}; max abs error {max_abs:.3g}")
    return worst
