"""process package."""
