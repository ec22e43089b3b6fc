"""Helpers shared by several test tiers and modules (one place each)."""
