// `trainscope-viewer`: parses the command line, loads the job from its
// source (a stored log, the live feed, or the synthetic demo) and either
// opens the window or renders views offscreen to PNG (--render).
//
// Usage (main.cc):
//   int main(int argc, char** argv) { return ViewerApp::Main(argc, argv); }
//
// Threading: the main thread.
#ifndef TRAINSCOPE_VIEWER_WIDGETS_VIEWER_APP_H_
#define TRAINSCOPE_VIEWER_WIDGETS_VIEWER_APP_H_

namespace trainscope::viewer {

class ViewerApp {
 public:
  // Exit codes: 0 ok, 1 failed (the message names the bad input), 2 usage.
  static int Main(int argc, char** argv);
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_WIDGETS_VIEWER_APP_H_
