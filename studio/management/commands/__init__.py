"""One command per long-running process or setup step of the studio."""
