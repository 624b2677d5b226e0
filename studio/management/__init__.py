"""Management commands of the studio."""
