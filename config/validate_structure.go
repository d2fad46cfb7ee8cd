package config

// ValidateStructure is the frozen check workflow code relies on: the form
// of each setting and its kind's options, as Validate checked them before
// ranges and lengths were added. Workflow code runs it on replay, so a rule
// added here would change how recorded histories replay: new rules go in
// Validate's other steps (limits.go, checkRanges), which run at the edges
// (the platforms file, the CLI, update validators, recorded verdicts).
func (p Platform) ValidateStructure() error {
	ve := &ValidationError{}
	p.checkStructure(ve, nil)
	if len(ve.Problems) > 0 {
		return ve
	}
	if err := p.validateKind(); err != nil {
		return err
	}
	return nil
}
