"""The training package (see DESIGN.md); grows with its issue."""
