r"""KernelBench evaluation: run a policy over levels 1-3 (in-process or as RQ jobs), resume, report the field's metrics.

    python -m training evaluate --problems ../shared/kernelbench/problems.jsonl --levels 1,2,3 \
        --policy heuristic --device cuda --out runs/eval-heuristic --workers 4
"""
