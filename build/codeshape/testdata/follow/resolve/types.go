package resolve

type cache struct{}

func (c *cache) get() {}

type snap struct{}

func (s snap) get() {}

type view struct{}

func (view) show() {}

type myErr struct{}

func (myErr) Error() string { return "" }

type embedded struct{}

func (embedded) promoted() {}

// shout.ToUpper shares its name with strings.ToUpper, which is never this package's.
type shout struct{}

func (shout) ToUpper() string { return "" }
