// exec+load probe: links what cpuctl links, does nothing unless given an argument.
#include <sdbus-c++/sdbus-c++.h>

#include <cstdio>
int main(int argc, char**) {
    if (argc > 1) {
        auto c = sdbus::createSystemBusConnection();
        std::puts(c->getUniqueName().c_str());
    }
    return 0;
}
