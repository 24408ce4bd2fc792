"""paths -> discover -> sources -> topology -> rules -> findings (a CheckResult).

check.py runs it (and settles the repository root and the project settings);
repository.py reads the repository into a topology; evaluate.py runs the budgets and the
rules over it, with suppressions and caps; options.py holds CheckOptions and UsageError,
which all three use."""
