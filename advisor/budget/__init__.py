"""Stage 3, budgets: slot and memory arithmetic per server, every term with its
source (slots: per server; arith: the formulas as text)."""
