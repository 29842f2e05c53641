package postgres

// Queries exposes the package's statements to its external tests.
var Queries = queries

// PruneStatements returns the statements Prune runs for tg: its batch and
// its dry-run count (for tests that prepare or explain them).
func PruneStatements(tg PruneTarget) (batch, count string, err error) {
	if err := ValidatePruneTargets([]PruneTarget{tg}); err != nil {
		return "", "", err
	}
	p := &Pruner{}
	return p.statement("batch", tg), p.statement("count", tg), nil
}
