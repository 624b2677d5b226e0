"""Task synthesis: seeds crawled from PyTorch and transformers, stacked into fused problems, filtered by execution."""
