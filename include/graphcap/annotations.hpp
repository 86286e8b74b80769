// graphcap/annotations.hpp - everything about annotations, in one include: annot::on (named
// scopes that tag the nodes a capture adds), their export (annotations(), JSON), the registry of
// instantiated graphs' annotations and the trace recorder that puts replayed kernels in lanes
// named by them. Link graphcap::annotations (it adds CUPTI); the core never includes this.
//
//   using annotated = graphcap::graph_with<graphcap::annot::on>;
//   annotated g;
//   g.capture([&](annotated::scope& cap) {
//     auto attention = cap.mark("attention");                    // {"name": "attention"}
//     attention_kernels(cap.stream());
//   });
//   for (const graphcap::node_annotation& node : g.annotations()) { ... }
#pragma once

#include <graphcap/graphcap.hpp>
#include <graphcap/policies/annot/on.hpp>
