"""Pure helpers of the studio, free of Django models and views."""
