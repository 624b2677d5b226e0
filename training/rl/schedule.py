"""Learning-rate schedules of the fine-tuning stages: a linear warm-up, then constant or a cosine decay to a floor.
Computed from the global step alone, so a resumed stage continues on the same curve."""

import math


def lr_at(step, total, peak, shape="constant", warmup=0.0, floor=0.1):
    """The learning rate of optimizer step STEP (from 0) of TOTAL: PEAK after a linear warm-up over the first WARMUP
    share of the steps, then constant, or (SHAPE 'cosine') decaying to FLOOR x PEAK at the last step."""
    warm = round(warmup * total)
    if step < warm:
        return peak * (step + 1) / warm
    if shape == "constant":
        return peak
    progress = min(1.0, (step - warm) / max(1, total - warm - 1))
    return peak * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress)))


def set_lr(optimizer, lr):
    for group in optimizer.param_groups:
        group["lr"] = lr
