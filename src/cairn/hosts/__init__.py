"""Adapters that run cairn inside hosts that are not trio programs."""
