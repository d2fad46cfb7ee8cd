package connectors

// simSpec is kind sim, the built-in simulator (sim.go): ordersync's own
// defaults, no options.
var simSpec = Spec[NoOptions]{Name: "sim", New: newSim}
