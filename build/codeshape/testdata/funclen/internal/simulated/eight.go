package simulated

type server struct{}

func (server) eight() {
	_ = 1
	_ = 2
	_ = 3
	_ = 4
	_ = 5
	_ = 6
}
