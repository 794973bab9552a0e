"""Recall: candidates, re-validation, temporal rules, fusion, budget and rendering."""
