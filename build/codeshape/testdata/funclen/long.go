package funclen

func three() {
	_ = 1
}

// five's doc comment is not counted.
func five() {
	_ = 1
	_ = 2
	_ = 3
}

type box[K comparable] struct{}

func (b *box[K]) six() {
	_ = 1
	_ = 2
	_ = 3
	_ = 4
}

func declared()
