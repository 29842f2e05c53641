package postgres

// Queries exposes the package's statements to its external tests.
var Queries = queries
