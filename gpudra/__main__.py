from gpudra.entry import main

main()
