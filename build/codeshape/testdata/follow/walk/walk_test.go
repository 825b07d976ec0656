package walk

import "testing"

// helperInTest is declared in a test file: follow does not know it.
func helperInTest() { Root() }

func TestRoot(t *testing.T) { helperInTest() }
