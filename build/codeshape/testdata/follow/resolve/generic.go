package resolve

func apply[T any](v T) T { return v }

type box[T any] struct{ v T }

func (b box[T]) open() T { return b.v }
