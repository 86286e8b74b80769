// graphcap/annotations.hpp - everything about annotations, in one include: annot::on (named
// scopes that tag the nodes a capture adds), their export (annotations(), JSON), the registry of
// live executables' annotations and the trace recorder that puts replayed kernels in lanes named
// by them. Link graphcap::annotations (it adds CUPTI); the core never includes this.
//
//   using annotated = graphcap::graph_with<graphcap::annot::on>;
//   annotated g;
//   g.capture([&](annotated::scope& cap) {
//     auto attention = cap.mark("attention");                    // {"name": "attention"}
//     attention_kernels(cap.stream());
//   });
//   for (const graphcap::node_annotation& node : g.annotations()) { ... }
//
// The pieces, one facility each: annotations/values.hpp (node_annotation, annotation_values),
// node_type.hpp, settings.hpp (node_discovery, keep_cupti_subscriber, annotation_id_source),
// notices.hpp, registry.hpp (recorded_annotations, find_annotation, clear_annotations),
// json.hpp, trace.hpp (kernel_record, write_chrome_trace), trace_recorder.hpp; the policy is
// annotations/on.hpp.
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/annotations/json.hpp>
#include <graphcap/annotations/notices.hpp>
#include <graphcap/annotations/on.hpp>
#include <graphcap/annotations/registry.hpp>
#include <graphcap/annotations/settings.hpp>
#include <graphcap/annotations/trace.hpp>
#include <graphcap/annotations/trace_recorder.hpp>
#include <graphcap/annotations/values.hpp>
#include <graphcap/cuda/node_type.hpp>
#include <graphcap/graphcap.hpp>
