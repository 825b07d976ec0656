package walk

func b1() {}

func b2() {
	a3()
	c1()
}

func b3() {}
