.PHONY: test demo build

test: ## every check CI runs
	scripts/test

demo: ## the one-command demo
	scripts/demo

build:
	go build -o bin/payrecon ./cmd/payrecon
