package main

import "errors"

var errTodo = errors.New("not built yet")

type demoCmd struct{}

func (c *demoCmd) Run(a *app) error { return errTodo }
