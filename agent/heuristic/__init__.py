"""The built-in heuristic optimizer: graph analysis, fusion planning and kernel code generation."""
