package config_test

import (
	"fmt"

	"github.com/ordersync/ordersync/config"
)

func ExampleParse() {
	file, err := config.Parse([]byte(`
default:
  interval: 10m
  retries: 8
platforms:
  shopify-acme:
    kind: shopify
    endpoint: https://acme.myshopify.com
    credentials: {env: SHOPIFY_ACME_TOKEN}
    retries: 3
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	p, _ := file.Get("shopify-acme")
	fmt.Println(p.Interval, p.Retries, p.TaskQueue, p.Credentials)
	// Output: 10m0s 3 orders-shopify env:SHOPIFY_ACME_TOKEN
}

func ExampleParse_invalid() {
	_, err := config.Parse([]byte(`
platforms:
  amazon-eu:
    kind: amazon
    endpoint: https://sellingpartnerapi-eu.amazon.com
    credentials: {env: AMAZON_EU}
    interval: 5m
    overlap: 5m
    retrys: 3
`))
	fmt.Println(err)
	// Output:
	// platform "amazon-eu": field "retrys": unknown field (line 9)
	// platform "amazon-eu": field "overlap": must be shorter than interval (5m0s), got 5m0s
}
