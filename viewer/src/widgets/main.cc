// trainscope-viewer: see ViewerApp.
#include "trainscope/viewer/widgets/viewer_app.h"

int main(int argc, char** argv) { return trainscope::viewer::ViewerApp::Main(argc, argv); }
