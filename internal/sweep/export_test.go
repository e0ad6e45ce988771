package sweep

// LabelKnown reports whether the label table names key, for the tests of
// sweeps written elsewhere (the paper's figures).
func LabelKnown(key string) bool {
	_, ok := lookup(key)
	return ok
}
