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
        result = (
            _compare_floats(ref, out, atol, rtol, where) if ref.is_floating_point() else _compare_exact(ref, out, where)
        )
        if result.reason and not result.compared:
            return result
        worst.max_abs_error = max(worst.max_abs_error, result.max_abs_error)
        worst.max_rel_error = max(worst.max_rel_error, result.max_rel_error)
        worst.compared += result.compared
        worst.mismatched += result.mismatched
        if not result.ok:
            worst.ok = False
            worst.reason = worst.reason or result.reason
    return worst


def compare_special(reference, specials):
    """Comparison of the NaN/Inf positions and values SPECIALS (two tensors per output: workers.common's
    special_values of the candidate's full outputs) with those of the full REFERENCE outputs, or None where every
    one is the reference's and the reference has no other: the sampled comparison then judges the rest."""
    import torch

    for i, ref in enumerate(reference):
        where = f"output {i}" if len(reference) > 1 else "output"
        positions, values = specials[2 * i], specials[2 * i + 1]
        if positions.numel() == 1 and int(positions[0]) < 0:
            return Comparison(False, f"{where}: more NaN/Inf values than the sandbox compares one by one", mismatched=1)
        flat = ref.reshape(-1)
        expected = (
            torch.nonzero(~torch.isfinite(flat)).reshape(-1) if flat.is_floating_point() else positions[:0]
        ).cpu()
        if not torch.equal(positions, expected):
            stray = int((~torch.isin(positions, expected)).sum())
            return Comparison(
                False,
                f"{where}: {stray} NaN/Inf value(s) where the reference is finite, {expected.numel()} in the reference "
                f"and {positions.numel()} in the output",
                mismatched=max(stray, 1),
            )
        if not torch.equal(values.nan_to_num(0.0, 1.0, -1.0), flat[expected].cpu().nan_to_num(0.0, 1.0, -1.0)):
            return Comparison(False, f"{where}: NaN/Inf positions or signs differ from the reference", mismatched=1)
    return None


def _compare_exact(ref, out, where):
    mismatched = int((ref != out).sum())
    max_abs = float((ref.long() - out.long()).abs().max()) if ref.numel() else 0.0
    reason = (
        f"{where}: {mismatched} of {ref.numel()} values differ (integer outputs must match exactly)"
        if mismatched
        else ""
    )
    return Comparison(not mismatched, reason, max_abs, 0.0, mismatched, ref.numel())


def _compare_floats(ref, out, atol, rtol, where):
    import torch

    # float32 holds a 1e-2 tolerance test exactly enough; in-place steps keep large outputs within memory.
    r, c = ref.float(), out.float()
    finite = torch.isfinite(r)
    bad = int((~torch.isfinite(c) & finite).sum())
    if bad:
        # compared: a few such values may be the FP32 reference's rounding (a running sum that float64 takes past
        # float's range), which float64 is asked to settle
        reason = f"{where}: {bad} NaN/Inf value(s) where the reference is finite"
        return Comparison(False, reason, mismatched=bad, compared=r.numel())
    special = ~finite
    if bool(special.any()) and not torch.equal(
        r[special].nan_to_num(0.0, 1.0, -1.0), c[special].nan_to_num(0.0, 1.0, -1.0)
    ):
        return Comparison(False, f"{where}: NaN/Inf positions or signs differ from the reference", mismatched=1)
    diff = (c - r).abs_().masked_fill_(special, 0.0)
    scale = r.abs().masked_fill_(special, 1.0)
    mismatched = int((diff > scale * rtol + atol).sum())
    max_abs = float(diff.max()) if diff.numel() else 0.0
    # Relative to max(|r|, atol): near-zero references would otherwise report meaningless ratios.
    max_rel = float(diff.div_(scale.clamp_min_(max(atol, 1e-12))).max()) if diff.numel() else 0.0
    reason = (
        (f"{where}: {mismatched} of {r.numel()} values outside atol={atol}, rtol={rtol}; max abs error {max_abs:.3g}")
        if mismatched
        else ""
    )
    return Comparison(not mismatched, reason, max_abs, max_rel, mismatched, r.numel())


def precise_errors(precise, candidate):
    """(max abs, max rel) error of CANDIDATE's float outputs against PRECISE ones (float64, same shapes), over the
    values where the precise output is finite: the precision a solution (or the FP32 reference) gives up."""
    import torch

    worst_abs = worst_rel = 0.0
    for ref, out in zip(precise, candidate):
        if not ref.is_floating_point() or tuple(ref.shape) != tuple(out.shape) or not ref.numel():
            continue
        r, c = ref.double(), out.to(ref.device).double()
        finite = torch.isfinite(r) & torch.isfinite(c)
        if not bool(finite.any()):
            continue
        diff = (c - r).abs()[finite]
        worst_abs = max(worst_abs, float(diff.max()))
        worst_rel = max(worst_rel, float((diff / r.abs()[finite].clamp_min(1e-6)).max()))
    return worst_abs, worst_rel
