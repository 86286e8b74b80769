// graphcap/verify_report.hpp - an entry header: <graphcap/inspection/verify_report.hpp>
// (docs/design.md, "The floor plan").
#pragma once

#include <graphcap/config.hpp>

#include <graphcap/inspection/verify_report.hpp>
