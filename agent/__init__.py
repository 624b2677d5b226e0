"""The agent package (see DESIGN.md); grows with its issue."""
