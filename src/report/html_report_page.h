// The report page's HTML, CSS and script, with /*STREAMDET_REPORT_DATA*/ where the data goes.
#pragma once

namespace sd {

const char* html_report_page();

}  // namespace sd
