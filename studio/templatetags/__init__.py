"""Template tags of the studio's pages."""
