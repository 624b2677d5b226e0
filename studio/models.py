"""Database models of the studio (runs, turns, problems, solutions arrive with the studio issue)."""
