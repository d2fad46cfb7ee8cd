package config

// ValidateStructure is the part of Validate that workflow code may rely on
// for runs recorded before settings verdicts were recorded in history.
func (p Platform) ValidateStructure() error {
	if err := p.Validate(); err != nil {
		return err
	}
	return nil
}
