"""What the learner's processes must agree on under `accelerate launch`: statistics pooled over every rank, and how
many minibatches each rank steps (DDP waits forever when one rank runs a backward pass the others do not)."""


def gather(accelerator, value):
    """[VALUE of each process], in rank order (a collective: every process must call it); [VALUE] alone when the
    run has one process."""
    if accelerator is None or accelerator.num_processes == 1:
        return [value]
    from accelerate.utils import gather_object

    return gather_object([value])


def mean(accelerator, value):
    """VALUE averaged over the processes (a collective): a decision taken on it is the same on every rank."""
    values = gather(accelerator, float(value))
    return sum(values) / len(values)


def batch_count(accelerator, items, size):
    """How many minibatches of SIZE every process steps: as many as the process with the most ITEMS needs."""
    return max(gather(accelerator, -(-items // size)))


def minibatches(order, count, size):
    """COUNT lists of at most SIZE indexes taken from ORDER in turn; a process with fewer items than the busiest
    one wraps around to its first ones rather than stepping fewer times."""
    n = len(order)
    for b in range(count):
        start = b * size
        yield order[start : start + size] if start < n else [order[(start + k) % n] for k in range(min(size, n))]
