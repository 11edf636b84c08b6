"""formulas package."""
