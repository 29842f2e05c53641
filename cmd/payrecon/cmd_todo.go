package main

import "errors"

var errTodo = errors.New("not built yet")

type relayCmd struct{}

func (c *relayCmd) Run(a *app) error { return errTodo }

type runCmd struct{}

func (c *runCmd) Run(a *app) error { return errTodo }

type statusCmd struct{}

func (c *statusCmd) Run(a *app) error { return errTodo }

type findingsCmd struct{}

func (c *findingsCmd) Run(a *app) error { return errTodo }

type demoCmd struct{}

func (c *demoCmd) Run(a *app) error { return errTodo }

type planCmd struct{}

func (c *planCmd) Run(a *app) error { return errTodo }
