// The one QApplication of the viewer_tests process, made on first use by the
// widget tests (Qt allows one per process; ctest sets QT_QPA_PLATFORM=offscreen).
#ifndef TESTS_VIEWER_WIDGETS_TEST_APPLICATION_H_
#define TESTS_VIEWER_WIDGETS_TEST_APPLICATION_H_

#include <QApplication>

namespace trainscope::viewer::testing {

inline void EnsureApplication() {
  if (QApplication::instance() != nullptr) return;
  static int argc = 1;
  static char name[] = "viewer_tests";
  static char* argv[] = {name, nullptr};
  new QApplication(argc, argv);  // lives as long as the process
}

}  // namespace trainscope::viewer::testing

#endif  // TESTS_VIEWER_WIDGETS_TEST_APPLICATION_H_
