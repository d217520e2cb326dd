#include "app/cli.h"

int main(int argc, char** argv) { return sd::cli_main(argc, argv); }
