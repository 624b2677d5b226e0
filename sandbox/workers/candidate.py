"""Candidate worker: imports the solution (building it), runs the trials, times it, profiles it, checks itself.

Everything it relies on (clocks, events, comparisons, the channel) is imported and captured before the
solution is; the parent checks its outputs in another process, so what it reports about correctness
cannot be forged from here.
"""

import time
from pathlib import Path

import torch

import sandbox.correctness  # noqa: F401 -- captured by the integrity snapshot before solution code runs
from sandbox import settings, timing_lock
from sandbox.config import EvalConfig
from sandbox.guard import AuditLog, Integrity, Recorder, fallback_violation
from sandbox.native import inline
from sandbox.problem import (
    import_file,
    make_inputs,
    make_model,
    spec_of,
    tensors_of,
    variant_inputs,
)
from sandbox.protocol import ChannelClosed
from sandbox.timing import measure
from sandbox.transfer import save_tensors
from sandbox.worker_start import worker_main
from sandbox.workers.common import (
    all_finite,
    error_text,
    is_cuda_fault,
    select,
    special_values,
    setup_device,
    synchronize,
)

_perf = time.perf_counter
_isfinite = torch.isfinite
_empty = torch.empty
_fill = torch.Tensor.fill_


class Failed(Exception):
    def __init__(self, status, log):
        super().__init__(log)
        self.status, self.log = status, log


def _classify_import(exc):
    text = error_text(exc)
    build = (
        "Error building extension" in text
        or "CalledProcessError" in text
        or "BuildError" in text
        or "ninja" in text
        and "FAILED" in text
    )
    return Failed("compile_error" if build else "load_error", text)


def _fault(exc):
    return Failed("crashed" if is_cuda_fault(exc) else "runtime_error", error_text(exc))


class Candidate:
    def __init__(self, channel, start):
        self.channel, self.start = channel, start
        self.device = start["device"]
        self.config = EvalConfig.from_json(start["config"])
        self.spec = None  # the problem's, sent once the reference validated it (the solution may load meanwhile)
        self.integrity = Integrity()
        self.audit = AuditLog(self.integrity)
        self.fallbacks = {}
        self.notes = []

    # -- loading -------------------------------------------------------------------------------------
    def load(self):
        setup_device(self.device)
        self.problem = import_file(self.start["problem"], "ks_problem")
        # The problem module lives in this process too: what solution code may not replace in it.
        self.problem_api = {n: getattr(self.problem, n) for n in ("Model", "get_inputs", "get_init_inputs")}
        if inline.wanted(Path(self.start["solution"]).read_bytes()):
            inline.install()  # load_inline and load build through the precompiled header, cached
        self.audit.active = True
        t0 = _perf()
        try:
            solution = import_file(self.start["solution"], "ks_solution")
        except BaseException as exc:  # noqa: BLE001 -- SystemExit from solution code is a load error too
            raise _classify_import(exc) from None
        finally:
            self.audit.active = False
        compile_s = _perf() - t0
        for build in inline.BUILDS:
            if build["via"] == "torch":
                self.notes.append(
                    f"the extension {build['name']!r} was built by torch's own load_inline, not the "
                    f"sandbox's fast build: {build['reason']}"
                )
        cls = getattr(solution, "ModelNew", None)
        if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
            raise Failed("load_error", "the solution defines no class ModelNew(nn.Module)")
        self.audit.active = True
        try:
            self.model = make_model(cls, self.problem, self.start["init_seed"], self.device)
            reference = make_model(self.problem.Model, self.problem, self.start["init_seed"], self.device)
            self._share_weights(reference)
            del reference
        except Exception as exc:  # noqa: BLE001
            raise Failed(
                "load_error", "constructing ModelNew(*get_init_inputs()) failed:\n" + error_text(exc)
            ) from None
        finally:
            self.audit.active = False
        return compile_s

    def _share_weights(self, reference):
        """Same initialization as Model: copy every parameter and buffer whose name and shape match."""
        theirs = reference.state_dict()
        mine = self.model.state_dict()
        shared = {k: v for k, v in theirs.items() if k in mine and mine[k].shape == v.shape}
        if shared:
            self.model.load_state_dict(shared, strict=False)

    # -- running -------------------------------------------------------------------------------------
    def _poison(self, output_bytes):
        """Fill the allocator's free memory with NaN so an output the kernel never writes cannot pass.

        Twice the output's size where memory allows, else as much as one block can hold: poisoning is a check,
        and must never itself run the evaluation out of memory.
        """
        if self.device != "cuda":
            return
        free, _ = torch.cuda.mem_get_info()
        cached = torch.cuda.memory_reserved() - torch.cuda.memory_allocated()
        nbytes = min(2 * output_bytes, int(0.8 * (free + cached)))
        while nbytes >= max(4, output_bytes // 8):
            try:
                _fill(_empty(nbytes // 4, dtype=torch.float32, device="cuda"), float("nan"))
                break
            except torch.OutOfMemoryError:
                nbytes //= 2
        if nbytes < output_bytes:
            self.notes.append(
                f"outputs poisoned only in part ({max(nbytes, 0) >> 20} MiB for "
                f"{output_bytes >> 20} MiB): GPU memory is short"
            )
        synchronize(self.device)

    def forward(self, inputs, fallbacks=None):
        """ModelNew(*inputs) under the dispatch recorder; what it falls back to is added to FALLBACKS (by default
        the evaluation's own tally, which strict mode turns into violations)."""
        fallbacks = self.fallbacks if fallbacks is None else fallbacks
        recorder = Recorder()
        self.audit.active = True
        try:
            with torch.no_grad(), recorder:
                out = self.model(*inputs)
            synchronize(self.device)
        except Exception as exc:  # noqa: BLE001
            raise _fault(exc) from None
        finally:
            self.audit.active = False
        for name, n in recorder.fallbacks.items():
            fallbacks[name] = fallbacks.get(name, 0) + n
        return out

    def trial(self, msg, inputs=None):
        """One trial: at the problem's shapes, or at another size (msg's variant: issue 22), whose fallbacks are
        reported with the output rather than counted as the evaluation's violations."""
        variant = msg.get("variant")
        fallbacks = {} if variant else None
        if inputs is None:
            inputs = (
                variant_inputs(self.problem, variant, msg["seed"], self.device)
                if variant
                else make_inputs(self.problem, msg["seed"], self.device)
            )
        self._poison(msg.get("output_bytes") or self.spec["output_bytes"])
        out = self.forward(inputs, fallbacks)
        tensors = tensors_of(out)
        if tensors is None:
            self.channel.send("computed", spec=spec_of(out), tensor=False)
            return None
        try:
            finite = all(all_finite(t, _isfinite) for t in tensors if t.is_floating_point())
        except Exception as exc:  # noqa: BLE001
            raise _fault(exc) from None
        self.channel.send(
            "computed",
            spec=spec_of(out if len(tensors) > 1 else tensors[0]),
            tensor=True,
            finite=finite,
            fallbacks=fallbacks or {},
        )
        order = self.channel.recv()
        saved = select(tensors, order.get("sample_seed"), self.config.sample_elements)
        if order.get("special"):
            saved += special_values(tensors)
        save_tensors(saved, order["path"])
        self.channel.send("saved")
        return tensors

    def time_it(self, msg):
        n = max(1, min(self.config.input_sets, (self.config.input_budget_mb << 20) // max(1, self.spec["input_bytes"])))
        self.sets = [make_inputs(self.problem, s, self.device) for s in msg["seeds"][:n]]
        if any(spec_of(s) != self.spec["inputs"] for s in self.sets):
            raise Failed(
                "violation",
                "the inputs drawn for timing differ in shape or dtype from the problem's: "
                "solution code changed the problem (get_inputs or what it reads)",
            )
        self._check_reuse()
        try:
            with timing_lock.on_timing_cores(self.device):  # the harness holds the timing lock meanwhile
                timing = measure(self.model, self.sets, self.device, self.config, msg.get("protocol"))
        except Exception as exc:  # noqa: BLE001
            raise _fault(exc) from None
        if timing.replay_matches is False:
            self.notes.append(
                "violation: ModelNew's output replayed from a CUDA graph differs from a direct call's: "
                "the timed graph does not compute what forward returns (launch-bound problems are "
                "timed by graph replay; do the same work whether or not a stream is capturing)"
            )
        return timing

    def _check_reuse(self):
        """Two live outputs must not share storage, and must not be an input unless the reference's is."""
        first = self.sets[0]
        second = self.sets[1 % len(self.sets)]
        with torch.no_grad():
            a = tensors_of(self.model(*first)) or []
            b = tensors_of(self.model(*second)) or []
        synchronize(self.device)
        if {t.data_ptr() for t in a} & {t.data_ptr() for t in b}:
            self.notes.append(
                "violation: ModelNew.forward returned the same output storage on two calls; "
                "outputs reused across calls are not rewarded"
            )
        inputs = {t.data_ptr() for t in second if isinstance(t, torch.Tensor)}
        if not self.spec["aliases_input"] and {t.data_ptr() for t in b} & inputs:
            self.notes.append("violation: ModelNew.forward returned its input's storage; Model returns a new tensor")

    def post_timing_trial(self, msg):
        """Fresh values written into the very buffers that were timed: a cache keyed by pointer is caught."""
        self.sets = self.sets[:1]  # the other timing sets are not needed any more: their memory poisons too
        fresh = make_inputs(self.problem, msg["seed"], self.device)
        target = self.sets[0]
        for dst, src in zip(target, fresh):
            if isinstance(dst, torch.Tensor):
                dst.copy_(src)
        return self.trial(msg, inputs=[d if isinstance(d, torch.Tensor) else s for d, s in zip(target, fresh)])

    def violations(self):
        found = [n[len("violation: ") :] for n in self.notes if n.startswith("violation: ")]
        if self.fallbacks:
            message = fallback_violation(self.fallbacks)
            (found if self.config.strict else self.notes).append(
                message if self.config.strict else "relaxed: " + message
            )
        for name in self.integrity.tampered():
            found.append(f"tampering: {name} was replaced while solution code ran")
        for name, original in self.problem_api.items():
            if getattr(self.problem, name, None) is not original:
                found.append(f"tampering: the problem's {name} was replaced while solution code ran")
        for event in sorted(set(self.audit.events)):
            found.append(f"tampering: solution code triggered '{event}'")
        return found


def warm():
    """Load, before any solution code, what the first forward under the dispatch recorder would load in the middle of
    trial 1 (the recorder's first use imports torch._dynamo: seconds), while the reference validates the problem. The
    thread count is set first, as setup_device sets it, so nothing starts a thread pool of another size before."""
    torch.set_num_threads(settings.CPU_THREADS)
    with torch.no_grad(), Recorder():
        torch.zeros(1) + 1


def serve(channel):
    warm()
    channel.send("started")
    start = channel.recv()
    cand = Candidate(channel, start)
    try:
        channel.send("loaded", compile_s=cand.load(), extensions=inline.BUILDS)
        while True:
            msg = channel.recv()
            kind = msg["kind"]
            if kind == "trial" and msg.get("variant"):
                try:
                    cand.trial(msg)
                except Failed as failure:  # at another size: reported, and the evaluation goes on
                    channel.send("failed", status=failure.status, log=failure.log)
            elif kind == "trial":
                cand.trial(msg)
            elif kind == "spec":
                cand.spec = msg["spec"]
            elif kind == "time":
                channel.send("timed", timing=cand.time_it(msg).to_json())
            elif kind == "post":
                cand.post_timing_trial(msg)
            elif kind == "profile":
                from sandbox.profiling import kernel_table

                channel.send("profiled", table=kernel_table(lambda: cand.model(*cand.sets[0]), cand.device))
            elif kind == "finish":  # asked again after the shape trials: what solution code did there counts too
                channel.send(
                    "final",
                    violations=cand.violations(),
                    notes=[n for n in cand.notes if not n.startswith("violation: ")],
                )
            elif kind == "exit":
                return
    except Failed as failure:
        channel.send("failed", status=failure.status, log=failure.log)
    except ChannelClosed:
        return  # the harness is done with this worker (or gone): nothing is left to report


if __name__ == "__main__":
    worker_main(serve, "sandbox.workers.candidate", __doc__.split("\n\n")[0])
