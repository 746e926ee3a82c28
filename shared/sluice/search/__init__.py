"""Search over the collections a caller reaches (R-SRCH-1..6)."""
